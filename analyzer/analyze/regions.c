#include "analyze/regions.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/util.h"

struct churn_region {
    uint64_t start, end;
    uint64_t stack;        /* of the call that mapped it */
    uint64_t priority;     /* a parent's is at least its children's */
    churn_region *left, *right;
};

static churn_region *node(churn_regions *r, uint64_t start, uint64_t end, uint64_t stack)
{
    churn_region *n = churn_xmalloc(sizeof *n);
    *n = (churn_region){start, end, stack, churn_hash64(++r->draws), NULL, NULL};
    return n;
}

static void removed_from(churn_regions *r, const churn_region *t, uint64_t bytes, uint64_t *sum)
{
    *sum += bytes;
    if (r->gone && bytes)
        r->gone(r->ctx, t->stack, bytes);
}

/* Ranges starting below key go to *below, the others to *rest. */
static void split(churn_region *t, uint64_t key, churn_region **below, churn_region **rest)
{
    if (!t) {
        *below = *rest = NULL;
    } else if (t->start < key) {
        split(t->right, key, &t->right, rest);
        *below = t;
    } else {
        split(t->left, key, below, &t->left);
        *rest = t;
    }
}

/* Every range of a starts below every range of b. */
static churn_region *merge(churn_region *a, churn_region *b)
{
    if (!a || !b)
        return a ? a : b;
    if (a->priority >= b->priority) {
        a->right = merge(a->right, b);
        return a;
    }
    b->left = merge(a, b->left);
    return b;
}

static churn_region *insert(churn_region *t, churn_region *n)
{
    churn_region *below, *rest;
    split(t, n->start, &below, &rest);
    return merge(merge(below, n), rest);
}

/* Frees the ranges of t, all starting inside [.., end): adds the bytes of each below end
   to *removed and returns the part of one past end, if any (at most one: they are disjoint). */
static churn_region *take_all(churn_regions *r, churn_region *t, uint64_t end,
                              uint64_t *removed)
{
    churn_region *tail = NULL;
    while (t) {
        if (t->left) { /* rotate right until there is no left child: no recursion */
            churn_region *l = t->left;
            t->left = l->right;
            l->right = t;
            t = l;
            continue;
        }
        churn_region *next = t->right;
        removed_from(r, t, (t->end < end ? t->end : end) - t->start, removed);
        if (t->end > end) {
            t->start = end;
            t->right = NULL;
            tail = t;
        } else {
            free(t);
        }
        t = next;
    }
    return tail;
}

uint64_t churn_regions_unmap(churn_regions *r, uint64_t start, uint64_t len)
{
    uint64_t end = start + len < start ? UINT64_MAX : start + len, removed = 0;
    churn_region *below, *rest, *inside, *above;
    split(r->root, start, &below, &rest);
    /* the range that starts below start may reach into [start, end) */
    churn_region *last = below;
    while (last && last->right)
        last = last->right;
    churn_region *tail = NULL;
    if (last && last->end > start) {
        removed_from(r, last, (last->end < end ? last->end : end) - start, &removed);
        if (last->end > end)
            tail = node(r, end, last->end, last->stack);
        last->end = start;
    }
    split(rest, end, &inside, &above);
    churn_region *cut = take_all(r, inside, end, &removed);
    if (cut)
        above = insert(above, cut);
    if (tail)
        above = insert(above, tail);
    r->root = merge(below, above);
    r->bytes -= removed;
    return removed;
}

void churn_regions_map(churn_regions *r, uint64_t start, uint64_t len, uint64_t stack)
{
    if (!len || start + len < start)
        return;
    churn_regions_unmap(r, start, len);
    r->root = insert(r->root, node(r, start, start + len, stack));
    r->bytes += len;
}

void churn_regions_free(churn_regions *r)
{
    uint64_t bytes = 0;
    r->gone = NULL;                           /* nothing is unmapped: the table goes */
    take_all(r, r->root, UINT64_MAX, &bytes); /* every range ends at or below UINT64_MAX */
    memset(r, 0, sizeof *r);
}
