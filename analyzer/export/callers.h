/*
 * The caller/callee view of the review page, from the flame graphs' stack tree: per function
 * its self value (stacks that end in it) and its inclusive value (stacks that pass through
 * it, each counted once however deep it recurses), with the functions that call it and that
 * it calls, each edge with the inclusive value that flows along it.  Functions are the tree's
 * frame names (inlined functions included), as in the flame graphs.
 */
#ifndef CHURN_EXPORT_CALLERS_H
#define CHURN_EXPORT_CALLERS_H

#include <stddef.h>
#include <stdint.h>

#include "export/tree.h"

#define CHURN_CALLERS_COLS 2
#define CHURN_CALLERS_EDGES 8 /* callers and callees kept per function */

typedef struct churn_caller_edge {
    uint32_t name; /* tree string index */
    int64_t v[CHURN_CALLERS_COLS];
} churn_caller_edge;

typedef struct churn_callers_row {
    uint32_t name, module; /* tree string indices */
    int64_t self[CHURN_CALLERS_COLS], incl[CHURN_CALLERS_COLS];
    churn_caller_edge callers[CHURN_CALLERS_EDGES], callees[CHURN_CALLERS_EDGES];
    size_t ncallers, ncallees;     /* kept, at most CHURN_CALLERS_EDGES */
    size_t all_callers, all_callees;
} churn_callers_row;

typedef struct churn_callers {
    churn_callers_row *rows; /* by inclusive value of the first column, descending */
    size_t count;
} churn_callers;

/* The top functions by the inclusive value of tree column cols[0] (then cols[1]); t must be
   finished (churn_tree_finish). */
void churn_callers_build(churn_callers *c, const churn_tree *t,
                         const unsigned cols[CHURN_CALLERS_COLS], size_t top);
void churn_callers_free(churn_callers *c);

#endif
