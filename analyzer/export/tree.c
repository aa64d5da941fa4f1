#include "export/tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/util.h"

#define INLINE_MAX 16

static uint64_t hash_string(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static uint64_t child_key(uint32_t parent, uint32_t name, uint32_t module)
{
    return churn_hash64(((uint64_t)parent << 32 | name) ^ churn_hash64(module));
}

static void rehash_strings(churn_tree *t)
{
    size_t cap = (t->string_mask + 1) * 2;
    free(t->string_slots);
    t->string_slots = churn_xcalloc(cap, sizeof *t->string_slots);
    t->string_mask = cap - 1;
    for (size_t i = 0; i < t->nstrings; i++) {
        size_t j = hash_string(t->strings[i]) & t->string_mask;
        while (t->string_slots[j])
            j = (j + 1) & t->string_mask;
        t->string_slots[j] = (uint32_t)i + 1;
    }
}

static uint32_t intern(churn_tree *t, const char *s)
{
    size_t j = hash_string(s) & t->string_mask;
    for (; t->string_slots[j]; j = (j + 1) & t->string_mask)
        if (strcmp(t->strings[t->string_slots[j] - 1], s) == 0)
            return t->string_slots[j] - 1;
    churn_reserve(&t->strings, &t->strings_cap, t->nstrings + 1, sizeof *t->strings);
    t->strings[t->nstrings] = churn_xstrdup(s);
    t->string_slots[j] = (uint32_t)++t->nstrings;
    if (t->nstrings * 2 > t->string_mask + 1)
        rehash_strings(t);
    return (uint32_t)t->nstrings - 1;
}

static void rehash_children(churn_tree *t)
{
    size_t cap = (t->child_mask + 1) * 2;
    free(t->child_slots);
    t->child_slots = churn_xcalloc(cap, sizeof *t->child_slots);
    t->child_mask = cap - 1;
    for (size_t i = 1; i < t->count; i++) {
        const churn_tree_node *n = &t->nodes[i];
        size_t j = child_key(n->parent, n->name, n->module) & t->child_mask;
        while (t->child_slots[j])
            j = (j + 1) & t->child_mask;
        t->child_slots[j] = (uint32_t)i + 1;
    }
}

static uint32_t child(churn_tree *t, uint32_t parent, uint32_t name, uint32_t module)
{
    size_t j = child_key(parent, name, module) & t->child_mask;
    for (; t->child_slots[j]; j = (j + 1) & t->child_mask) {
        const churn_tree_node *n = &t->nodes[t->child_slots[j] - 1];
        if (n->parent == parent && n->name == name && n->module == module)
            return t->child_slots[j] - 1;
    }
    size_t old_cap = t->cap;
    churn_reserve(&t->nodes, &t->cap, t->count + 1, sizeof *t->nodes);
    if (t->cap != old_cap) {
        t->self = churn_xrealloc(t->self, t->cap * t->cols * sizeof *t->self);
        memset(t->self + old_cap * t->cols, 0, (t->cap - old_cap) * t->cols * sizeof *t->self);
    }
    uint32_t i = (uint32_t)t->count++;
    t->nodes[i] = (churn_tree_node){name, module, parent, 0, t->nodes[parent].child};
    t->nodes[parent].child = i;
    t->child_slots[j] = i + 1;
    if (t->count * 2 > t->child_mask + 1)
        rehash_children(t);
    return i;
}

void churn_tree_init(churn_tree *t, unsigned cols)
{
    memset(t, 0, sizeof *t);
    t->cols = cols;
    t->string_mask = 1023;
    t->string_slots = churn_xcalloc(t->string_mask + 1, sizeof *t->string_slots);
    t->child_mask = 1023;
    t->child_slots = churn_xcalloc(t->child_mask + 1, sizeof *t->child_slots);
    intern(t, "");
    churn_reserve(&t->nodes, &t->cap, 1, sizeof *t->nodes);
    t->self = churn_xcalloc(t->cap * cols, sizeof *t->self);
    t->nodes[0] = (churn_tree_node){intern(t, "all"), 0, 0, 0, 0};
    t->count = 1;
}

void churn_tree_free(churn_tree *t)
{
    for (size_t i = 0; i < t->nstrings; i++)
        free(t->strings[i]);
    free(t->strings);
    free(t->nodes);
    free(t->self);
    free(t->total);
    free(t->string_slots);
    free(t->child_slots);
    free(t->path);
    memset(t, 0, sizeof *t);
}

static void push_frame(churn_tree *t, size_t *n, uint32_t name, uint32_t module)
{
    churn_reserve(&t->path, &t->path_cap, *n + 2, sizeof *t->path);
    t->path[(*n)++] = name;
    t->path[(*n)++] = module;
}

/* The stack's frames, innermost first, as (name, module) string pairs in t->path. */
static size_t stack_frames(churn_tree *t, const churn_frames_source *src, uint64_t stack)
{
    size_t depth, n = 0;
    const uint64_t *ips = churn_stack_defs_get(src->stacks, stack, &depth);
    char buf[1024];
    if (!ips) {
        churn_frames_missing(stack, buf, sizeof buf);
        push_frame(t, &n, intern(t, buf), 0);
        return n / 2;
    }
    churn_frame frames[INLINE_MAX];
    uint64_t generation = churn_stack_defs_generation(src->stacks, stack);
    for (size_t i = 0; i < depth; i++) { /* return addresses, all of them: frames.c */
        size_t k = churn_symbolizer_resolve(src->sym, ips[i], 1, generation, frames,
                                            INLINE_MAX);
        for (size_t f = 0; f < k; f++) {
            churn_frame_function(ips[i], &frames[f], buf, sizeof buf);
            uint32_t name = intern(t, buf);
            push_frame(t, &n, name, intern(t, frames[f].module ? frames[f].module : ""));
        }
    }
    return n / 2;
}

void churn_tree_add_stack(churn_tree *t, const churn_frames_source *src, uint64_t stack,
                          unsigned col, int64_t v)
{
    if (!v)
        return;
    size_t n = stack_frames(t, src, stack);
    uint32_t node = 0;
    for (size_t i = n; i-- > 0;)
        node = child(t, node, t->path[2 * i], t->path[2 * i + 1]);
    t->self[node * t->cols + col] += v;
}

void churn_tree_add_frame(churn_tree *t, const char *name, unsigned col, int64_t v)
{
    if (!v)
        return;
    uint32_t node = child(t, 0, intern(t, name), 0);
    t->self[node * t->cols + col] += v;
}

static const churn_tree *sort_tree;

static int by_name(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    int c = strcmp(churn_tree_name(sort_tree, a), churn_tree_name(sort_tree, b));
    if (c)
        return c;
    c = strcmp(churn_tree_module(sort_tree, a), churn_tree_module(sort_tree, b));
    return c ? c : (a > b) - (a < b);
}

void churn_tree_finish(churn_tree *t)
{
    size_t cols = t->cols;
    free(t->total);
    t->total = churn_xmalloc(t->count * cols * sizeof *t->total);
    memcpy(t->total, t->self, t->count * cols * sizeof *t->total);
    /* A child is always created after its parent, so one backward sweep sums subtrees. */
    for (size_t i = t->count; i-- > 1;)
        for (size_t c = 0; c < cols; c++)
            t->total[t->nodes[i].parent * cols + c] += t->total[i * cols + c];

    uint32_t *kids = churn_xmalloc(t->count * sizeof *kids);
    sort_tree = t;
    for (size_t i = 0; i < t->count; i++) {
        size_t n = 0;
        for (uint32_t k = t->nodes[i].child; k; k = t->nodes[k].sibling)
            kids[n++] = k;
        if (n < 2)
            continue;
        qsort(kids, n, sizeof *kids, by_name);
        t->nodes[i].child = kids[0];
        for (size_t k = 0; k < n; k++)
            t->nodes[kids[k]].sibling = k + 1 < n ? kids[k + 1] : 0;
    }
    sort_tree = NULL;
    free(kids);
}
