#include "symbols/perfmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "churn/format.h"

#include "base/hash.h"
#include "base/util.h"

typedef struct code {
    uint64_t start, end;
    char *name;                    /* as the map has it */
    char *function, *file, *label; /* parsed: owned, NULL when none */
    unsigned line;
} code;

/* An open-addressing table on a 64-bit key: key + 1 (0: empty) and a value. */
typedef struct {
    uint64_t *keys;
    void **values;
    size_t mask, count;
} table;

struct churn_codes {
    code *items; /* in the order added */
    size_t count, cap;
    size_t *by_start; /* indices sorted by start, then order; rebuilt after additions */
    size_t sorted;    /* how many items by_start covers */
    size_t *slots;    /* open addressing on (start, end, name): index + 1 */
    size_t mask;
    table py_codes; /* code id -> "qualname:file" of its CHURN_CODE_PY record */
    table py_lines; /* Python frame address -> its code, made at its first lookup */
};

/* Entries before the last one starting at or below an address that may still cover it. */
#define LOOK_BACK 16

churn_codes *churn_codes_new(void)
{
    churn_codes *c = churn_xcalloc(1, sizeof *c);
    c->mask = 255;
    c->slots = churn_xcalloc(c->mask + 1, sizeof *c->slots);
    return c;
}

static void code_free(code *k)
{
    free(k->name);
    free(k->function);
    free(k->file);
    free(k->label);
}

static void **table_slot(const table *t, uint64_t key)
{
    size_t i = churn_hash64(key) & t->mask;
    while (t->keys[i] && t->keys[i] != key + 1)
        i = (i + 1) & t->mask;
    return &t->values[i];
}

static void *table_get(const table *t, uint64_t key)
{
    return t->keys ? *table_slot(t, key) : NULL;
}

/* Puts key's value (not NULL) where the key has none. */
static void table_put(table *t, uint64_t key, void *value)
{
    if ((t->count + 1) * 2 > t->mask + 1 || !t->keys) {
        table grown = {.mask = t->keys ? t->mask * 2 + 1 : 255, .count = t->count};
        grown.keys = churn_xcalloc(grown.mask + 1, sizeof *grown.keys);
        grown.values = churn_xcalloc(grown.mask + 1, sizeof *grown.values);
        for (size_t i = 0; t->keys && i <= t->mask; i++)
            if (t->keys[i]) {
                void **v = table_slot(&grown, t->keys[i] - 1);
                *v = t->values[i];
                grown.keys[v - grown.values] = t->keys[i];
            }
        free(t->keys);
        free(t->values);
        *t = grown;
    }
    void **v = table_slot(t, key);
    t->keys[v - t->values] = key + 1;
    *v = value;
    t->count++;
}

void churn_codes_free(churn_codes *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->count; i++)
        code_free(&c->items[i]);
    for (size_t i = 0; c->py_codes.keys && i <= c->py_codes.mask; i++)
        free(c->py_codes.values[i]);
    for (size_t i = 0; c->py_lines.keys && i <= c->py_lines.mask; i++)
        if (c->py_lines.values[i]) {
            code_free(c->py_lines.values[i]);
            free(c->py_lines.values[i]);
        }
    free(c->py_codes.keys);
    free(c->py_codes.values);
    free(c->py_lines.keys);
    free(c->py_lines.values);
    free(c->items);
    free(c->by_start);
    free(c->slots);
    free(c);
}

static uint64_t key_of(uint64_t start, uint64_t end, const char *name)
{
    uint64_t h = churn_hash64(start ^ churn_hash64(end));
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    return churn_hash64(h);
}

static size_t *slot_of(size_t *slots, size_t mask, const code *items, uint64_t start,
                       uint64_t end, const char *name)
{
    size_t i = key_of(start, end, name) & mask;
    while (slots[i]) {
        const code *k = &items[slots[i] - 1];
        if (k->start == start && k->end == end && !strcmp(k->name, name))
            break;
        i = (i + 1) & mask;
    }
    return &slots[i];
}

static char *copy(const char *s, size_t n)
{
    char *d = churn_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* A decimal number ending at end (exclusive) after a ':', or -1. */
static long trailing_number(const char *s, const char **colon)
{
    const char *p = s + strlen(s);
    const char *digits_end = p;
    while (p > s && p[-1] >= '0' && p[-1] <= '9')
        p--;
    if (p == digits_end || p == s || p[-1] != ':' || digits_end - p > 9)
        return -1;
    *colon = p - 1;
    return strtol(p, NULL, 10);
}

/* V8's "TYPE:[tier]name location" for functions of scripts: the location is "file:line" or
   "file:line:column" (the function's start), the tier one of ~ * ^ + (interpreted,
   optimized, baseline, Maglev: the same function's rows are one), a ' after it for code
   specialized to its context (V8 12 and later: workerd's); CPython's
   "py::qualname:file", and libchurn's for CPython's frame chain "py::qualname:file:line"
   (the frame's line, not the function's start). */
static void parse(code *k)
{
    static const char *const script_types[] = {
        "JS:", "Eval:", "LazyCompile:", "Function:", "Script:"};
    const char *n = k->name;
    if (!strncmp(n, "py::", 4)) {
        const char *colon = strchr(n + 4, ':');
        if (colon && colon > n + 4 && colon[1]) {
            k->function = copy(n + 4, (size_t)(colon - (n + 4)));
            k->file = churn_xstrdup(colon + 1);
            k->label = churn_xstrdup(k->file);
            char *line_colon;
            long line = trailing_number(k->file, (const char **)&line_colon);
            if (line > 0 && line_colon > k->file) {
                *line_colon = '\0';
                k->line = (unsigned)line;
            }
        }
        return;
    }
    for (size_t i = 0; i < sizeof script_types / sizeof *script_types; i++) {
        size_t t = strlen(script_types[i]);
        if (strncmp(n, script_types[i], t))
            continue;
        const char *p = n + t;
        if (*p && strchr("~*^+", *p))
            p++;
        if (*p == '\'') /* a tier's code specialized to its context */
            p++;
        const char *space = strchr(p, ' ');
        if (!space || !space[1])
            return;
        char *where = churn_xstrdup(space + 1), *colon;
        long last = trailing_number(where, (const char **)&colon), line = last;
        if (last >= 0) {
            *colon = '\0';
            long first = trailing_number(where, (const char **)&colon);
            if (first >= 0) {
                *colon = '\0';
                line = first;
            }
        }
        k->function = space > p ? copy(p, (size_t)(space - p)) : churn_xstrdup("(anonymous)");
        k->file = where;
        k->line = line > 0 ? (unsigned)line : 0;
        char label[4096];
        if (k->line)
            snprintf(label, sizeof label, "%s:%u", k->file, k->line);
        else
            snprintf(label, sizeof label, "%s", k->file);
        k->label = churn_xstrdup(label);
        return;
    }
}

void churn_codes_add(churn_codes *c, uint64_t start, uint64_t size, const char *name)
{
    uint64_t end = start + size;
    if (*slot_of(c->slots, c->mask, c->items, start, end, name))
        return;
    churn_reserve(&c->items, &c->cap, c->count + 1, sizeof *c->items);
    code *k = &c->items[c->count];
    memset(k, 0, sizeof *k);
    k->start = start;
    k->end = end;
    k->name = churn_xstrdup(name);
    parse(k);
    c->count++;
    if (c->count * 2 > c->mask + 1) {
        size_t n = (c->mask + 1) * 2;
        size_t *slots = churn_xcalloc(n, sizeof *slots);
        for (size_t i = 0; i < c->count; i++) {
            const code *e = &c->items[i];
            *slot_of(slots, n - 1, c->items, e->start, e->end, e->name) = i + 1;
        }
        free(c->slots);
        c->slots = slots;
        c->mask = n - 1;
    } else {
        *slot_of(c->slots, c->mask, c->items, start, end, name) = c->count;
    }
}

void churn_codes_add_py(churn_codes *c, uint64_t id, const char *name)
{
    if (!table_get(&c->py_codes, id))
        table_put(&c->py_codes, id, churn_xstrdup(name));
}

/* The code of the Python frame at a (churn_py_frame), named "py::qualname:file:line" as a
   CHURN_CODE_RANGE record at [a - 1, a + 1) would name it; NULL when no record names its
   code object. */
static const code *py_line(churn_codes *c, uint64_t a)
{
    code *k = table_get(&c->py_lines, a);
    if (k)
        return k;
    const char *prefix = table_get(&c->py_codes, churn_py_frame_code(a));
    if (!prefix)
        return NULL;
    size_t len = strlen(prefix) + 16;
    k = churn_xcalloc(1, sizeof *k);
    k->start = a - 1;
    k->end = a + 1;
    k->name = churn_xmalloc(len);
    snprintf(k->name, len, "py::%s:%u", prefix, churn_py_frame_line(a));
    parse(k);
    table_put(&c->py_lines, a, k);
    return k;
}

static void frame_of(const code *k, churn_frame *out)
{
    memset(out, 0, sizeof *out);
    out->function = k->function ? k->function : k->name;
    out->file = k->file;
    out->line = k->line;
    out->module = k->label;
    out->module_id = CHURN_MODULE_GENERATED;
}

static const code *sort_items;

static int by_start(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    const code *p = &sort_items[a], *q = &sort_items[b];
    if (p->start != q->start)
        return p->start < q->start ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* The range entry naming addr: the one added last of those covering it; NULL when none. */
static const code *range_at(churn_codes *c, uint64_t addr)
{
    if (!c->count)
        return NULL;
    if (c->sorted != c->count) {
        c->by_start = churn_xrealloc(c->by_start, c->count * sizeof *c->by_start);
        for (size_t i = 0; i < c->count; i++)
            c->by_start[i] = i;
        sort_items = c->items;
        qsort(c->by_start, c->count, sizeof *c->by_start, by_start);
        c->sorted = c->count;
    }
    size_t lo = 0, hi = c->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->items[c->by_start[mid]].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    const code *best = NULL;
    for (size_t k = lo; k > 0 && lo - k < LOOK_BACK; k--) {
        const code *e = &c->items[c->by_start[k - 1]];
        if (addr < e->end && (!best || e > best))
            best = e;
    }
    return best;
}

int churn_codes_frame(churn_codes *c, uint64_t addr, churn_frame *out)
{
    if (!c)
        return 0;
    const code *best = range_at(c, addr);
    if (!best && churn_py_frame(addr | 1))
        best = py_line(c, addr | 1);
    if (!best)
        return 0;
    frame_of(best, out);
    return 1;
}
