#include "export/callers.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

typedef struct fn_sums {
    int64_t self[CHURN_CALLERS_COLS], incl[CHURN_CALLERS_COLS];
    uint32_t module;
    int seen;
} fn_sums;

/* An edge's sums while the tree is walked: (function, neighbour) -> values, one table for
   callers and one for callees, open addressing on the pair. */
typedef struct edge_slot {
    uint64_t key; /* function << 32 | neighbour, + 1; 0 empty */
    int64_t v[CHURN_CALLERS_COLS];
} edge_slot;

typedef struct edges {
    edge_slot *slots;
    size_t mask, used;
} edges;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    return x ^ (x >> 33);
}

static void edges_add(edges *e, uint32_t fn, uint32_t other, const int64_t *v)
{
    if ((e->used + 1) * 4 > (e->mask + 1) * 3) {
        size_t n = e->mask ? (e->mask + 1) * 2 : 1024;
        edge_slot *slots = churn_xcalloc(n, sizeof *slots);
        for (size_t i = 0; e->mask && i <= e->mask; i++) {
            if (!e->slots[i].key)
                continue;
            size_t j = mix(e->slots[i].key) & (n - 1);
            while (slots[j].key)
                j = (j + 1) & (n - 1);
            slots[j] = e->slots[i];
        }
        free(e->slots);
        e->slots = slots;
        e->mask = n - 1;
    }
    uint64_t key = ((uint64_t)fn << 32 | other) + 1;
    size_t j = mix(key) & e->mask;
    while (e->slots[j].key && e->slots[j].key != key)
        j = (j + 1) & e->mask;
    if (!e->slots[j].key) {
        e->slots[j].key = key;
        e->used++;
    }
    for (unsigned c = 0; c < CHURN_CALLERS_COLS; c++)
        e->slots[j].v[c] += v[c];
}

static int by_value(const int64_t *a, const int64_t *b)
{
    for (unsigned c = 0; c < CHURN_CALLERS_COLS; c++)
        if (a[c] != b[c])
            return a[c] > b[c] ? -1 : 1;
    return 0;
}

static int row_cmp(const void *x, const void *y)
{
    const churn_callers_row *a = x, *b = y;
    int c = by_value(a->incl, b->incl);
    return c ? c : (a->name > b->name) - (a->name < b->name);
}

static int edge_cmp(const void *x, const void *y)
{
    const churn_caller_edge *a = x, *b = y;
    int c = by_value(a->v, b->v);
    return c ? c : (a->name > b->name) - (a->name < b->name);
}

/* Keeps the row's largest edges of one table (the whole table is scanned once per row: rows
   are few, the top of the page). */
static void keep_edges(const edges *e, uint32_t fn, churn_caller_edge *out, size_t *kept,
                       size_t *all)
{
    size_t n = 0, cap = 0;
    churn_caller_edge *v = NULL;
    for (size_t i = 0; e->mask && i <= e->mask; i++) {
        uint64_t key = e->slots[i].key;
        if (!key || (uint32_t)((key - 1) >> 32) != fn)
            continue;
        churn_reserve(&v, &cap, n + 1, sizeof *v);
        v[n].name = (uint32_t)(key - 1);
        memcpy(v[n].v, e->slots[i].v, sizeof v[n].v);
        n++;
    }
    qsort(v, n, sizeof *v, edge_cmp);
    *all = n;
    *kept = n < CHURN_CALLERS_EDGES ? n : CHURN_CALLERS_EDGES;
    memcpy(out, v, *kept * sizeof *v);
    free(v);
}

/* Whether a node's function already appears among its ancestors (recursion): its values are
   then counted where the outermost occurrence is. */
static int recursive(const churn_tree *t, uint32_t node)
{
    uint32_t name = t->nodes[node].name;
    for (uint32_t p = t->nodes[node].parent; p; p = t->nodes[p].parent)
        if (t->nodes[p].name == name)
            return 1;
    return 0;
}

void churn_callers_build(churn_callers *c, const churn_tree *t,
                         const unsigned cols[CHURN_CALLERS_COLS], size_t top)
{
    memset(c, 0, sizeof *c);
    fn_sums *fns = churn_xcalloc(t->nstrings ? t->nstrings : 1, sizeof *fns);
    edges callers = {0}, callees = {0};
    for (uint32_t i = 1; i < t->count; i++) {
        const churn_tree_node *n = &t->nodes[i];
        fn_sums *f = &fns[n->name];
        int64_t self[CHURN_CALLERS_COLS], total[CHURN_CALLERS_COLS];
        for (unsigned k = 0; k < CHURN_CALLERS_COLS; k++) {
            self[k] = t->self[(size_t)i * t->cols + cols[k]];
            total[k] = t->total[(size_t)i * t->cols + cols[k]];
            f->self[k] += self[k];
        }
        if (!f->seen) {
            f->seen = 1;
            f->module = n->module;
        }
        if (recursive(t, i))
            continue;
        for (unsigned k = 0; k < CHURN_CALLERS_COLS; k++)
            f->incl[k] += total[k];
        if (n->parent) {
            edges_add(&callers, n->name, t->nodes[n->parent].name, total);
            edges_add(&callees, t->nodes[n->parent].name, n->name, total);
        }
    }
    size_t count = 0;
    for (size_t s = 0; s < t->nstrings; s++)
        count += fns[s].seen;
    churn_callers_row *rows = churn_xcalloc(count ? count : 1, sizeof *rows);
    size_t k = 0;
    for (size_t s = 0; s < t->nstrings; s++) {
        if (!fns[s].seen)
            continue;
        rows[k].name = (uint32_t)s;
        rows[k].module = fns[s].module;
        memcpy(rows[k].self, fns[s].self, sizeof rows[k].self);
        memcpy(rows[k].incl, fns[s].incl, sizeof rows[k].incl);
        k++;
    }
    qsort(rows, count, sizeof *rows, row_cmp);
    c->count = top && top < count ? top : count;
    for (size_t i = 0; i < c->count; i++) {
        keep_edges(&callers, rows[i].name, rows[i].callers, &rows[i].ncallers, &rows[i].all_callers);
        keep_edges(&callees, rows[i].name, rows[i].callees, &rows[i].ncallees, &rows[i].all_callees);
    }
    c->rows = rows;
    free(callers.slots);
    free(callees.slots);
    free(fns);
}

void churn_callers_free(churn_callers *c)
{
    free(c->rows);
    memset(c, 0, sizeof *c);
}
