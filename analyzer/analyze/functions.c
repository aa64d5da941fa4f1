#include "analyze/functions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/fragment.h"
#include "base/hash.h"
#include "base/util.h"
#include "symbols/wrapshape.h"

#define INLINE_MAX 16

/* The C library's own allocating functions (strdup, fopen, qsort's buffer, ...) are not what
   a user looks for: the row goes to the program's function that called them. */
static int in_libc(const char *module)
{
    return module && (strncmp(module, "libc.so", 7) == 0 || strncmp(module, "libc-", 5) == 0);
}

static uint64_t str_hash(const char *s, uint64_t h)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return churn_hash64(h);
}

/* Functions with a name are one row per (module, name); without one, per start (the call
   frame information's, churn_frame's entry) or else recorded ip, and module (an address of
   an unloaded library can be another library's later). */
static uint64_t key_of(const churn_function *fn)
{
    uint64_t h = str_hash(fn->module, 0xcbf29ce484222325ULL);
    if (!fn->name)
        return churn_hash64(h ^ fn->ip ^ fn->offset);
    return str_hash(fn->name, h);
}

static int same_module(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

static int same(const churn_function *a, const churn_function *b)
{
    if (!a->name || !b->name)
        return !a->name && !b->name && a->ip == b->ip && a->offset == b->offset &&
               same_module(a->module, b->module);
    return strcmp(a->name, b->name) == 0 && same_module(a->module, b->module);
}

static uint64_t *find_slot(uint64_t *slots, size_t mask, const churn_function *fns,
                           const churn_function *want)
{
    size_t i = key_of(want) & mask;
    while (slots[i] && !same(&fns[slots[i] - 1], want))
        i = (i + 1) & mask;
    return &slots[i];
}

static uint64_t intern(churn_functions *f, const churn_function *want)
{
    uint64_t *slot = find_slot(f->slots, f->mask, f->fns, want);
    if (*slot) {
        churn_function *fn = &f->fns[*slot - 1];
        if (fn->via != want->via && (!fn->via || !want->via || strcmp(fn->via, want->via)))
            fn->via_others = 1;
        if (!fn->via)
            fn->via = want->via;
        return *slot;
    }
    churn_reserve(&f->fns, &f->cap, f->count + 1, sizeof *f->fns);
    f->fns[f->count] = *want;
    *slot = ++f->count;
    if (f->count * 4 > (f->mask + 1) * 3) {
        size_t n = (f->mask + 1) * 2;
        uint64_t *slots = churn_xcalloc(n, sizeof *slots);
        for (size_t i = 0; i < f->count; i++)
            *find_slot(slots, n - 1, f->fns, &f->fns[i]) = i + 1;
        free(f->slots);
        f->slots = slots;
        f->mask = n - 1;
    }
    return f->count;
}

/* An allocation wrapper of the program (docs/analyzer.md, "Growth per function"): a function
   whose own name says it is an allocation entry point, matched on its last name component
   (after any namespace, without parameters), case-insensitively: containing malloc, calloc,
   realloc, memalign, strdup/strndup or mem_alloc (jq's jv_mem_alloc); "alloc" after at
   most two letters (leading underscores aside: xalloc, kzalloc, alloc::alloc::alloc);
   __rust_alloc, __rdl_alloc, __rg_alloc, g_slice_alloc; or operator new / new[]. */
static int is_wrapper(const char *name)
{
    if (!name)
        return 0;
    if (!strncmp(name, "operator new", 12))
        return 1;
    const char *end = strchr(name, '(');
    size_t len = end ? (size_t)(end - name) : strlen(name);
    const char *last = name;
    for (size_t i = 0; i + 1 < len; i++)
        if (name[i] == ':' && name[i + 1] == ':')
            last = name + i + 2;
    char low[128];
    size_t n = (size_t)(name + len - last);
    if (n >= sizeof low)
        return 0;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)(last[i] >= 'A' && last[i] <= 'Z' ? last[i] - 'A' + 'a' : last[i]);
    low[n] = 0;
    static const char *const parts[] = {"malloc", "calloc", "realloc", "memalign", "strdup",
                                        "strndup", "mem_alloc"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (strstr(low, parts[i]))
            return 1;
    /* "alloc" with a prefix of two letters at most (xalloc, zalloc, kzalloc), or a known
       allocator's entry point: parent_alloc or node_alloc is the program's own function */
    const char *bare = low + strspn(low, "_");
    size_t m = strlen(bare);
    if (m >= 5 && m <= 7 && !strcmp(bare + m - 5, "alloc"))
        return 1;
    static const char *const names[] = {"rust_alloc", "rust_alloc_zeroed", "rdl_alloc",
                                        "rg_alloc", "g_slice_alloc", "g_slice_alloc0"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(bare, names[i]))
            return 1;
    return 0;
}

/* The label of an unnamed function known by its start ("module+0xstart", as its rows and
   frames print it), for `via`: kept until the table is freed. */
static const char *start_label(churn_functions *f, const churn_function *fn)
{
    char text[512];
    snprintf(text, sizeof text, "%s+0x%llx", fn->module, (unsigned long long)fn->offset);
    for (size_t i = 0; i < f->label_count; i++)
        if (!strcmp(f->labels[i], text))
            return f->labels[i];
    churn_reserve(&f->labels, &f->label_cap, f->label_count + 1, sizeof *f->labels);
    return f->labels[f->label_count++] = churn_xstrdup(text);
}

/* Whether frame j of n at recorded ip is an allocation wrapper: by its name (is_wrapper), or,
   with no name but its start known, by its code's shape (wrapshape.h: it returns the block
   the call at ip returned). */
static int is_wrapper_frame(churn_functions *f, const churn_frame *fr, size_t j, size_t n,
                            uint64_t ip, uint64_t generation)
{
    if (fr->function)
        return is_wrapper(fr->function);
    if (!fr->entry || !fr->module || j + 1 != n)
        return 0;
    if (!f->shapes)
        f->shapes = churn_wrapshape_new(f->sym);
    return churn_wrapshape_returns_block(f->shapes, ip, generation, fr->module_id);
}

/* growth.h's parent_of: the innermost frame outside the C library, its innermost inlined
   function first, or rather, when that is an allocation wrapper (is_wrapper_frame), the first of
   its callers outward that is not one, which then names the wrapper it called (via).  A stack
   entirely inside the C library keeps its innermost frame, and one whose frames outside it
   are all wrappers its innermost wrapper. */
/* A script of the runtime's own library: node's (node:buffer, node:internal/...) and
   CPython's frozen modules (<frozen importlib._bootstrap>). */
static int runtime_script(const char *file)
{
    return !strncmp(file, "node:", 5) || file[0] == '<';
}

/* The innermost frame of a script function (symbolize.h: generated code with a source file)
   of the stack, as a function, skipping the runtime's own library where the program's own
   script is further out (Buffer.alloc is not what a user looks for: the function that called
   it is); 0 when it has none. */
static uint64_t script_function_of(churn_functions *f, const uint64_t *ips, size_t depth,
                                   uint64_t generation)
{
    churn_frame fr;
    churn_function first = {0};
    for (size_t i = 0; i < depth; i++) {
        if (!churn_symbolizer_resolve(f->sym, ips[i], 1, generation, &fr, 1) ||
            fr.module_id != CHURN_MODULE_GENERATED || !fr.file)
            continue;
        churn_function fn = {.name = fr.function, .module = fr.module, .ip = ips[i]};
        if (!runtime_script(fr.file))
            return intern(f, &fn);
        if (!first.name)
            first = fn;
    }
    return first.name ? intern(f, &first) : 0;
}

static uint64_t function_of(void *ctx, uint64_t stack)
{
    churn_functions *f = ctx;
    size_t depth;
    const uint64_t *ips = churn_stack_defs_get(f->stacks, stack, &depth);
    if (!ips || !depth)
        return 0;
    uint64_t generation = churn_stack_defs_generation(f->stacks, stack);
    uint64_t script = f->by_script ? script_function_of(f, ips, depth, generation) : 0;
    if (script)
        return script;
    churn_frame frames[INLINE_MAX];
    churn_function fn = {0}, first = {0};
    int have_first = 0;
    const char *via = NULL;
    for (size_t i = 0; i < depth; i++) {
        size_t n = churn_symbolizer_resolve(f->sym, ips[i], 1, generation, frames,
                                            INLINE_MAX);
        if (!n || (i > 0 && in_libc(frames[0].module)))
            continue;
        for (size_t j = 0; j < n; j++) {
            /* the module and offset of the names' generation of the module map (frames.h) */
            fn.name = frames[j].function;
            fn.module = frames[j].module;
            fn.ip = ips[i];
            fn.offset = frames[j].module ? ips[i] - frames[j].bias : ips[i];
            if (!fn.name && frames[j].entry && frames[j].module) {
                /* unnamed, but its start is known: one row per function, not per call */
                fn.offset = frames[j].entry;
                fn.ip = frames[j].bias + frames[j].entry;
            }
            if (in_libc(fn.module))
                break; /* frame 0 in the C library: kept if nothing outside it follows */
            if (!is_wrapper_frame(f, &frames[j], j, n, ips[i], generation))
                goto found;
            if (!have_first) {
                first = fn;
                have_first = 1;
            }
            via = fn.name ? fn.name : start_label(f, &fn);
        }
    }
    if (have_first) {
        fn = first;
        via = NULL;
    }
found:
    fn.via = via;
    return intern(f, &fn);
}

void churn_functions_attach(churn_functions *f, churn_growth *g, const churn_stack_defs *stacks,
                            churn_symbolizer *sym)
{
    memset(f, 0, sizeof *f);
    churn_growth_init(&f->growth, g->window_first, g->window_last);
    f->mask = 255;
    f->slots = churn_xcalloc(f->mask + 1, sizeof *f->slots);
    f->stacks = stacks;
    f->sym = sym;
    g->parents = &f->growth;
    g->parent_of = function_of;
    g->parent_ctx = f;
}

void churn_functions_free(churn_functions *f)
{
    churn_growth_free(&f->growth);
    churn_wrapshape_free(f->shapes);
    for (size_t i = 0; i < f->label_count; i++)
        free(f->labels[i]);
    free(f->labels);
    free(f->fns);
    free(f->slots);
    memset(f, 0, sizeof *f);
}

/* Whether frame fr is fn's own: by name and module, or unnamed by its start. */
static int is_own_frame(const churn_function *fn, const churn_frame *fr)
{
    if (fn->name)
        return fr->function && !strcmp(fr->function, fn->name) &&
               same_module(fr->module, fn->module);
    return !fr->function && fr->module && fr->entry == fn->offset &&
           same_module(fr->module, fn->module);
}

size_t churn_functions_callers(churn_functions *f, const churn_function *fn, uint64_t stack,
                               const char **names, size_t max)
{
    size_t depth, n = 0;
    const uint64_t *ips = churn_stack_defs_get(f->stacks, stack, &depth);
    uint64_t generation = churn_stack_defs_generation(f->stacks, stack);
    churn_frame frames[INLINE_MAX];
    int past = 0;
    for (size_t i = 0; ips && i < depth && n < max; i++) {
        size_t k = churn_symbolizer_resolve(f->sym, ips[i], 1, generation, frames, INLINE_MAX);
        for (size_t j = 0; j < k && n < max; j++) {
            const char *name = frames[j].function;
            if (!past) {
                past = is_own_frame(fn, &frames[j]);
                continue;
            }
            if (!name || in_libc(frames[j].module) || (fn->name && !strcmp(name, fn->name)) ||
                (n && !strcmp(name, names[n - 1])))
                continue;
            names[n++] = name;
        }
    }
    return n;
}

int churn_functions_stack_calls(churn_functions *f, uint64_t stack, const char *name)
{
    size_t depth;
    const uint64_t *ips = churn_stack_defs_get(f->stacks, stack, &depth);
    uint64_t generation = churn_stack_defs_generation(f->stacks, stack);
    churn_frame frames[INLINE_MAX];
    for (size_t i = 0; ips && i < depth; i++) {
        size_t k = churn_symbolizer_resolve(f->sym, ips[i], 1, generation, frames, INLINE_MAX);
        for (size_t j = 0; j < k; j++)
            if (frames[j].function && !strcmp(frames[j].function, name))
                return 1;
    }
    return 0;
}

void churn_functions_finish(churn_functions *f, const churn_growth *g, enum churn_ending ended)
{
    /* each unnamed function's callsite that grew most, else allocated most */
    struct pick {
        uint64_t stack;
        int grew;
        double by;
    } *best = churn_xcalloc(f->count + 1, sizeof *best);
    for (size_t i = 0; i < g->count; i++) {
        const churn_callsite *s = &g->sites[i];
        if (!s->parent)
            continue;
        churn_function *fn = &f->fns[f->growth.sites[s->parent - 1].stack - 1];
        churn_retained r = churn_growth_retention(g, s, ended);
        struct churn_function_class *c = &fn->classes[r.kind];
        c->stacks++;
        c->count = churn_wrap_add(c->count, (uint64_t)r.count);
        c->bytes = churn_wrap_add(c->bytes, (uint64_t)r.bytes);
        c->growth += churn_fit_slope(&s->bytes_fit);
        fn->stacks++;
        fn->allocs += s->allocs;
        fn->frees += s->frees;
        fn->alloc_bytes += s->alloc_bytes;
        fn->free_bytes += s->free_bytes;
        fn->temporary += s->temporary;
        struct pick *b = &best[fn - f->fns];
        double slope = churn_fit_slope(&s->bytes_fit);
        struct pick p = {s->stack, slope > 0, slope > 0 ? slope : (double)s->alloc_bytes};
        if (!fn->name && fn->module &&
            (!b->stack || p.grew > b->grew || (p.grew == b->grew && p.by > b->by)))
            *b = p;
    }
    for (size_t i = 0; i < f->count; i++) {
        const char *caller = NULL;
        if (best[i].stack && churn_functions_callers(f, &f->fns[i], best[i].stack, &caller, 1))
            f->fns[i].caller = caller;
    }
    free(best);
}

/* The order of churn_functions_classes: nonzero when class a comes before class b. */
static int class_before(const churn_function *fn, enum churn_retention a, enum churn_retention b)
{
    /* what a class tells a user most, when the figures do not decide */
    static const int rank[CHURN_RETENTION_KINDS] = {
        [CHURN_RETENTION_LEAKED] = 0, [CHURN_RETENTION_KEPT] = 1, [CHURN_RETENTION_LIVE] = 2,
        [CHURN_RETENTION_RECLAIMED] = 3, [CHURN_RETENTION_STEADY] = 4};
    const struct churn_function_class *x = &fn->classes[a], *y = &fn->classes[b];
    double gx = x->growth > 0 ? x->growth : 0, gy = y->growth > 0 ? y->growth : 0;
    if (gx != gy)
        return gx > gy;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes;
    return rank[a] < rank[b];
}

size_t churn_functions_classes(const churn_function *fn, int retained,
                               enum churn_retention *order)
{
    size_t n = 0;
    for (int k = 0; k < CHURN_RETENTION_KINDS; k++) {
        const struct churn_function_class *c = &fn->classes[k];
        if (!c->stacks || (retained && !c->count && !c->bytes))
            continue;
        size_t at = n++;
        while (at > 0 && class_before(fn, (enum churn_retention)k, order[at - 1])) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = (enum churn_retention)k;
    }
    return n;
}

churn_retained churn_functions_retention(const churn_functions *f, const churn_callsite *row,
                                         enum churn_ending ended)
{
    churn_retained r = churn_growth_retention(&f->growth, row, ended);
    const churn_function *fn = churn_functions_of(f, row);
    enum churn_retention order[CHURN_RETENTION_KINDS];
    if (churn_functions_classes(fn, 0, order))
        r.kind = order[0];
    return r;
}

void churn_functions_pinned(churn_functions *f, churn_growth *g,
                            const struct churn_frag_part *parts, size_t n)
{
    for (size_t i = 0; i < f->count; i++)
        f->fns[i].pinned_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const churn_callsite *s = churn_growth_site(g, parts[i].key);
        if (s->parent)
            f->fns[f->growth.sites[s->parent - 1].stack - 1].pinned_bytes +=
                churn_frag_pinned(&parts[i]);
    }
}

void churn_functions_types(churn_functions *f, const churn_growth *g, churn_cxx_types *types)
{
    /* A function's callsites nearly always construct one type.  Where they construct
       several, a running choice stands in for a table per (function, type): callsites of the
       chosen type add their allocations to it, and a callsite of another type with more
       allocations than that takes over. */
    for (size_t i = 0; i < g->count; i++) {
        const churn_callsite *s = &g->sites[i];
        if (!s->parent)
            continue;
        const char *type = churn_cxx_type_of(types, s->stack);
        churn_function *fn = &f->fns[f->growth.sites[s->parent - 1].stack - 1];
        if (!type)
            continue;
        if (fn->type && strcmp(fn->type, type) == 0)
            fn->type_allocs += s->allocs;
        else if (!fn->type || s->allocs > fn->type_allocs) {
            fn->type = type;
            fn->type_allocs = s->allocs;
        }
    }
}

churn_callsite **churn_functions_sorted(const churn_functions *f, size_t top, size_t *n)
{
    size_t total, kept = 0;
    churn_callsite **v = churn_growth_sorted(&f->growth, &total);
    for (size_t i = 0; i < total && (!top || kept < top); i++) {
        const churn_function *fn = churn_functions_of(f, v[i]);
        if (fn->allocs || fn->frees || v[i]->live_count || v[i]->live_bytes)
            v[kept++] = v[i];
    }
    *n = kept;
    return v;
}
