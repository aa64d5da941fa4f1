/*
 * Callsites merged by allocating function: the innermost frame of a stack that is not in the
 * C library nor one of the program's allocation wrappers (xmalloc, zmalloc_usable, operator
 * new: functions.c; unnamed, by its code: wrapshape.h), after inline expansion, across all the stacks that reach it.  A function's live series is the sum of
 * its callsites' series, kept as a growth table of its own (growth.h: each callsite passes
 * its changes on to its function), so its growth fit is that of the sum, not a sum of fits.
 */
#ifndef CHURN_FUNCTIONS_H
#define CHURN_FUNCTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "symbols/cxxtype.h"
#include "analyze/growth.h"
#include "read/stacks.h"
#include "symbols/symbolize.h"

typedef struct churn_function {
    const char *name;   /* demangled; NULL when the symbolizer does not know it */
    const char *module; /* basename; NULL outside every module */
    uint64_t ip;        /* for a function without a name: its start (churn_frame's entry),
                           else the frame's recorded address */
    uint64_t offset;    /* ip - module bias, for display */
    size_t stacks;      /* callsites merged into the row */
    const char *via;    /* the allocation wrapper one of its stacks called (functions.c), or
                           NULL: none did */
    int via_others;     /* other stacks called another wrapper, or none */
    /* Without a name: the first named function outward in its callsite that grew most (else
       allocated most), so that a stripped library's row says what reached it; or NULL. */
    const char *caller;
    const char *type;   /* the C++ type its callsites construct most (by allocations), or NULL */
    uint64_t type_allocs;
    uint64_t allocs, frees, alloc_bytes, free_bytes; /* sums of the callsites' */
    uint64_t temporary;
    double pinned_bytes; /* its callsites' pinned bytes in the main pinning ranking */
    /* Its callsites by their own retention class (growth.h): how many, what they retained,
       and the sum of their growth fits' bytes per epoch.  The row's class is one of these
       (churn_functions_retention), not the class of the summed series: a steady population
       larger than half of what another stack keeps until the exit hides that stack's
       accumulation from the sum's 1.5 x mean test. */
    struct churn_function_class {
        size_t stacks;
        int64_t count, bytes;
        double growth;
    } classes[CHURN_RETENTION_KINDS];
} churn_function;

typedef struct churn_functions {
    churn_growth growth; /* "stack" = function id: index + 1 into fns */
    churn_function *fns;
    size_t count, cap;
    uint64_t *slots; /* open addressing on the function's key: id, 0 empty */
    size_t mask;
    const churn_stack_defs *stacks;
    churn_symbolizer *sym;
    struct churn_wrapshape *shapes; /* made when an unnamed frame is first judged */
    char **labels;                  /* of unnamed wrappers, for via */
    size_t label_count, label_cap;
    /* Each stack's function is its innermost frame of a script function of the runtime
       (JavaScript, Python: named by the trace's CODE records) where it has one
       (--script-functions). */
    int by_script;
} churn_functions;

/* Makes every callsite that g creates from now on pass its live changes to its function. */
void churn_functions_attach(churn_functions *f, churn_growth *g, const churn_stack_defs *stacks,
                            churn_symbolizer *sym);
void churn_functions_free(churn_functions *f);

/* Adds the callsites' counts, stack numbers and retention classes (ended: the trace has the
   process's exit, as churn_growth_retention) to their functions; call once, after
   churn_growth_finish. */
void churn_functions_finish(churn_functions *f, const churn_growth *g, enum churn_ending ended);

/* A function row's retention: the class of its callsites whose summed growth (bytes per
   epoch, the positive sums) is the largest; without growth, the class that retained the
   most bytes; without either, the first class present of leaked, kept_until_exit, live,
   reclaimed, steady.  count and bytes (what was live before the teardown) and the bulk free
   are those of the function's summed series, all its callsites'. */
churn_retained churn_functions_retention(const churn_functions *f, const churn_callsite *row,
                                         enum churn_ending ended);

/* The classes present in a function row (retained: only those that retained objects), the
   row's own first, then by growth, retained bytes: writes up to CHURN_RETENTION_KINDS into
   order, returns how many. */
size_t churn_functions_classes(const churn_function *fn, int retained,
                               enum churn_retention *order);

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

/* The first `max` named functions outward of fn's own frame in a stack of its (outside the C
   library, each once in a row); returns how many. */
size_t churn_functions_callers(churn_functions *f, const churn_function *fn, uint64_t stack,
                               const char **names, size_t max);
/* Whether a frame of the stack is the function `name` (its symbol's name). */
int churn_functions_stack_calls(churn_functions *f, uint64_t stack, const char *name);

/* Function rows worth showing (activity in the window or live objects), by growth like the
   callsites; at most top (0 = all).  The caller frees the array. */
churn_callsite **churn_functions_sorted(const churn_functions *f, size_t top, size_t *n);

#endif
