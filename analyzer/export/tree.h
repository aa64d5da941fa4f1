/*
 * The stack tree every flame graph is drawn from: callsites' stacks, root first, merged by
 * frame, with a few value columns per node (one per metric, or a window and its base for a
 * differential graph).  Frames are named by function (inlined functions included) so that
 * one function's allocations at several lines are one box; an ip without a function is
 * named module+0xoffset, as in the reports.
 */
#ifndef CHURN_EXPORT_TREE_H
#define CHURN_EXPORT_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "symbols/frames.h"

typedef struct churn_tree_node {
    uint32_t name, module;           /* indices into strings; module 0 is "" (unknown) */
    uint32_t parent, child, sibling; /* node indices, 0 = none; node 0 is the root */
} churn_tree_node;

typedef struct churn_tree {
    churn_tree_node *nodes;
    size_t count, cap;
    unsigned cols;
    int64_t *self;   /* count x cols: values of stacks that end at the node */
    int64_t *total;  /* count x cols: self plus descendants; filled by churn_tree_finish */
    char **strings;
    size_t nstrings, strings_cap;
    uint32_t *string_slots, *child_slots; /* open addressing: index + 1, 0 empty */
    size_t string_mask, child_mask;
    uint32_t *path; /* scratch: one stack's frames */
    size_t path_cap;
} churn_tree;

void churn_tree_init(churn_tree *t, unsigned cols);
void churn_tree_free(churn_tree *t);

/* Adds v to column col of the node of the stack's innermost frame. */
void churn_tree_add_stack(churn_tree *t, const churn_frames_source *src, uint64_t stack,
                          unsigned col, int64_t v);

/* Adds v to column col of a frame of its own under the root (values without a stack). */
void churn_tree_add_frame(churn_tree *t, const char *name, unsigned col, int64_t v);

/* Sums the totals and orders every node's children by name. */
void churn_tree_finish(churn_tree *t);

static inline const char *churn_tree_name(const churn_tree *t, uint32_t node)
{
    return t->strings[t->nodes[node].name];
}

static inline const char *churn_tree_module(const churn_tree *t, uint32_t node)
{
    return t->strings[t->nodes[node].module];
}

#endif
