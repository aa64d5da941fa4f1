#include "analyze/suppress.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define INLINE_MAX 16

static const struct {
    const char *rule, *what;
} builtin[] = {
    /* The pool is eh_alloc.cc's static constructor, a local function: Debian's libstdc++
       keeps only .dynsym, which does not name it, so without its debug info the frame is
       libstdc++.so.6+offset, called from ld.so's call_init. */
    {"init:libstdc++.so*",
     "libstdc++'s start-up allocations: its emergency exception-handling pool (eh_alloc.cc, "
     "about 72 KiB), allocated by the library's initializer when it is loaded and kept for "
     "the life of the process so that an exception can still be thrown when malloc fails"},
};

static int add_rule(churn_suppressions *s, const char *text, const char *what)
{
    enum churn_suppress_kind kind;
    size_t at;
    if (!strncmp(text, "leak:", 5)) {
        kind = CHURN_SUPPRESS_LEAK;
        at = 5;
    } else if (!strncmp(text, "init:", 5)) {
        kind = CHURN_SUPPRESS_INIT;
        at = 5;
    } else {
        return 0;
    }
    if (!text[at])
        return 0;
    churn_reserve(&s->rules, &s->cap, s->count + 1, sizeof *s->rules);
    churn_suppression *r = &s->rules[s->count++];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->rule = churn_xstrdup(text);
    r->pattern = r->rule + at;
    r->what = churn_xstrdup(what);
    return 1;
}

void churn_suppressions_defaults(churn_suppressions *s)
{
    for (size_t i = 0; i < sizeof builtin / sizeof *builtin; i++)
        add_rule(s, builtin[i].rule, builtin[i].what);
}

int churn_suppressions_load(churn_suppressions *s, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--suppressions %s: %s", path, strerror(errno));
        return 0;
    }
    char line[4096];
    unsigned n = 0;
    int ok = 1;
    while (ok && fgets(line, sizeof line, f)) {
        n++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *p = line + strspn(line, " \t");
        size_t len = strcspn(p, " \t\r\n");
        if (!len)
            continue;
        if (p[len + strspn(p + len, " \t\r\n")]) {
            snprintf(err, errlen, "%s:%u: one rule per line, no spaces in it", path, n);
            ok = 0;
            break;
        }
        p[len] = '\0';
        char what[512];
        snprintf(what, sizeof what, "%s:%u", path, n);
        if (!add_rule(s, p, what)) {
            snprintf(err, errlen, "%s:%u: '%s' is not leak:PATTERN or init:MODULE-PATTERN",
                     path, n, p);
            ok = 0;
        }
    }
    if (ok && ferror(f)) {
        snprintf(err, errlen, "--suppressions %s: read error", path);
        ok = 0;
    }
    fclose(f);
    return ok;
}

static int glob(const char *pattern, const char *s)
{
    return s && fnmatch(pattern, s, 0) == 0;
}

/* The dynamic loader, by its usual file names. */
static int is_loader(const char *module)
{
    return glob("ld-linux*.so*", module) || glob("ld.so*", module) || glob("ld64.so*", module);
}

/* The module of a recorded ip (a return address, frames.c) in the module map of its stack's
   generation: after an unload, another library can hold the address. */
static const char *module_of(const churn_frames_source *src, uint64_t ip, uint64_t generation)
{
    churn_frame frame;
    return churn_symbolizer_resolve(src->sym, ip, 1, generation, &frame, 1) ? frame.module : NULL;
}

/* A demangled name without its parameter list ("f(int) const" -> "f"), so that a rule can
   name a function as it is written in the source; 0 when it has none. */
static int without_params(const char *name, char *buf, size_t len)
{
    const char *end = strrchr(name, ')');
    if (!end)
        return 0;
    int depth = 0;
    for (const char *p = end; p >= name; p--) {
        depth += *p == ')' ? 1 : *p == '(' ? -1 : 0;
        if (depth == 0) {
            size_t n = (size_t)(p - name);
            if (!n || n >= len)
                return 0;
            memcpy(buf, name, n);
            buf[n] = '\0';
            return 1;
        }
    }
    return 0;
}

static int function_matches(const char *pattern, const char *function)
{
    char bare[1024];
    return glob(pattern, function) ||
           (function && without_params(function, bare, sizeof bare) && glob(pattern, bare));
}

static int leak_matches(const char *pattern, const churn_frames_source *src, const uint64_t *ips,
                        size_t depth, uint64_t generation)
{
    churn_frame frames[INLINE_MAX];
    for (size_t i = 0; i < depth; i++) {
        /* every recorded ip is a return address (frames.c) */
        size_t n = churn_symbolizer_resolve(src->sym, ips[i], 1, generation, frames, INLINE_MAX);
        for (size_t k = 0; k < n; k++)
            if (function_matches(pattern, frames[k].function) || glob(pattern, frames[k].file))
                return 1;
        if (n && glob(pattern, frames[0].module))
            return 1;
    }
    return 0;
}

static int init_matches(const char *pattern, const churn_frames_source *src, const uint64_t *ips,
                        size_t depth, uint64_t generation)
{
    size_t i = 0;
    while (i < depth && glob(pattern, module_of(src, ips[i], generation)))
        i++;
    return i > 0 && i < depth && is_loader(module_of(src, ips[i], generation));
}

static int by_stack(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

static const churn_suppression *find(const churn_suppressions *s, uint64_t (*list)[2], size_t n,
                                     uint64_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (list[mid][0] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && list[lo][0] == key ? &s->rules[list[lo][1]] : NULL;
}

const churn_suppression *churn_suppressions_of(const churn_suppressions *s, uint64_t stack)
{
    return s ? find(s, s->matched, s->nmatched, stack) : NULL;
}

/* A function row is left out when its matched callsites hold all of its live objects. */
static void suppress_functions(churn_suppressions *s, const churn_growth *g)
{
    const churn_growth *f = g->parents;
    if (!f || !s->nmatched)
        return;
    int64_t *count = churn_xcalloc(f->count, sizeof *count);
    int64_t *bytes = churn_xcalloc(f->count, sizeof *bytes);
    size_t *rule = churn_xcalloc(f->count, sizeof *rule); /* index + 1 */
    for (size_t i = 0; i < g->count; i++) {
        const churn_callsite *c = &g->sites[i];
        const churn_suppression *r = c->parent ? churn_suppressions_of(s, c->stack) : NULL;
        if (!r)
            continue;
        size_t p = c->parent - 1;
        count[p] += c->live_count;
        bytes[p] += c->live_bytes;
        if (!rule[p])
            rule[p] = (size_t)(r - s->rules) + 1;
    }
    size_t cap = 0;
    for (size_t p = 0; p < f->count; p++) {
        if (!rule[p] || count[p] != f->sites[p].live_count || bytes[p] != f->sites[p].live_bytes)
            continue;
        churn_reserve(&s->functions, &cap, s->nfunctions + 1, sizeof *s->functions);
        s->functions[s->nfunctions][0] = f->sites[p].stack;
        s->functions[s->nfunctions][1] = rule[p] - 1;
        s->nfunctions++;
    }
    if (s->nfunctions)
        qsort(s->functions, s->nfunctions, sizeof *s->functions, by_stack);
    free(count);
    free(bytes);
    free(rule);
}

void churn_suppressions_apply(churn_suppressions *s, const churn_growth *g,
                              const churn_frames_source *src)
{
    /* The rules are shared by the reports of one command (--tree's images, --diff's two
       runs), whose stack ids are each their own: what an earlier report matched goes. */
    s->nmatched = s->nfunctions = 0;
    for (size_t r = 0; r < s->count; r++) {
        s->rules[r].callsites = 0;
        s->rules[r].live_count = s->rules[r].live_bytes = 0;
    }
    size_t cap = 0;
    for (size_t i = 0; i < g->count && s->count; i++) {
        const churn_callsite *c = &g->sites[i];
        size_t depth;
        const uint64_t *ips = churn_stack_defs_get(src->stacks, c->stack, &depth);
        if (c->live_count <= 0 || !ips)
            continue;
        uint64_t generation = churn_stack_defs_generation(src->stacks, c->stack);
        for (size_t r = 0; r < s->count; r++) {
            churn_suppression *rule = &s->rules[r];
            int hit = rule->kind == CHURN_SUPPRESS_INIT
                          ? init_matches(rule->pattern, src, ips, depth, generation)
                          : leak_matches(rule->pattern, src, ips, depth, generation);
            if (!hit)
                continue;
            rule->callsites++;
            rule->live_count += c->live_count;
            rule->live_bytes += c->live_bytes;
            churn_reserve(&s->matched, &cap, s->nmatched + 1, sizeof *s->matched);
            s->matched[s->nmatched][0] = c->stack;
            s->matched[s->nmatched][1] = r;
            s->nmatched++;
            break;
        }
    }
    if (s->nmatched)
        qsort(s->matched, s->nmatched, sizeof *s->matched, by_stack);
    suppress_functions(s, g);
}

const churn_suppression *churn_suppressions_of_function(const churn_suppressions *s,
                                                        uint64_t function)
{
    return s ? find(s, s->functions, s->nfunctions, function) : NULL;
}

void churn_suppressions_free(churn_suppressions *s)
{
    for (size_t i = 0; i < s->count; i++) {
        free(s->rules[i].rule);
        free(s->rules[i].what);
    }
    free(s->rules);
    free(s->matched);
    free(s->functions);
    memset(s, 0, sizeof *s);
}
