/*
 * Callsites merged by allocating function: the innermost frame of a stack that is not in the
 * C library (after inline expansion, so a one-line wrapper inlined into its caller is the
 * function), across all the stacks that reach it.  A function's live series is the sum of
 * its callsites' series, kept as a growth table of its own (growth.h: each callsite passes
 * its changes on to its function), so its growth fit is that of the sum, not a sum of fits.
 */
#ifndef CHURN_FUNCTIONS_H
#define CHURN_FUNCTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "cxxtype.h"
#include "growth.h"
#include "stacks.h"
#include "symbolize.h"

typedef struct churn_function {
    const char *name;   /* demangled; NULL when the symbolizer does not know it */
    const char *module; /* basename; NULL outside every module */
    uint64_t ip;        /* the frame's recorded address, for a function without a name */
    uint64_t offset;    /* ip - module bias, for display */
    size_t stacks;      /* callsites merged into the row */
    const char *type;   /* the C++ type its callsites construct most (by allocations), or NULL */
    uint64_t type_allocs;
    uint64_t allocs, frees, alloc_bytes, free_bytes; /* sums of the callsites' */
    uint64_t temporary;
    double pinned_bytes; /* its callsites' pinned bytes in the main pinning ranking */
} churn_function;

typedef struct churn_functions {
    churn_growth growth; /* "stack" = function id: index + 1 into fns */
    churn_function *fns;
    size_t count, cap;
    uint64_t *slots; /* open addressing on the function's key: id, 0 empty */
    size_t mask;
    const churn_stack_defs *stacks;
    churn_symbolizer *sym;
} churn_functions;

/* Makes every callsite that g creates from now on pass its live changes to its function. */
void churn_functions_attach(churn_functions *f, churn_growth *g, const churn_stack_defs *stacks,
                            churn_symbolizer *sym);
void churn_functions_free(churn_functions *f);

/* Adds the callsites' counts and stack numbers to their functions; call once, after
   churn_growth_finish. */
void churn_functions_finish(churn_functions *f, const churn_growth *g);

/* Adds each callsite's pinned bytes in parts (sorted or not: every part is one callsite,
   key = stack id) to its function. */
struct churn_frag_part;
void churn_functions_pinned(churn_functions *f, churn_growth *g,
                            const struct churn_frag_part *parts, size_t n);

/* Sets each function's type from its callsites' (cxxtype.h), the one with most allocations. */
void churn_functions_types(churn_functions *f, const churn_growth *g, churn_cxx_types *types);

/* The function of a growth row of f->growth. */
static inline const churn_function *churn_functions_of(const churn_functions *f,
                                                       const churn_callsite *row)
{
    return &f->fns[row->stack - 1];
}

/* Function rows worth showing (activity in the window or live objects), by growth like the
   callsites; at most top (0 = all).  The caller frees the array. */
churn_callsite **churn_functions_sorted(const churn_functions *f, size_t top, size_t *n);

#endif
