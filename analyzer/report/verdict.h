/*
 * The verdict (docs/analyzer.md, "The verdict"): what every report says first, three to six
 * plain sentences, and the figures they give, which the JSON carries as well: how much RSS
 * grows per epoch over the steady window and what it is made of; the functions that hold the
 * growth, with type, retention and share; what holds the largest other part; the next step,
 * when one applies.  Each slope it states comes with its bound, and a direction the bound
 * does not support is not claimed.
 */
#ifndef CHURN_VERDICT_H
#define CHURN_VERDICT_H

#include <stddef.h>

#include "analyze/split.h"
#include "report/report.h"

#define CHURN_VERDICT_SENTENCES 6
#define CHURN_VERDICT_FUNCTIONS 3
#define CHURN_VERDICT_CALLERS 2

typedef struct churn_verdict_function {
    const churn_callsite *row; /* a function row (of a->functions or a->map_functions) */
    const churn_function *fn;
    double bytes_per_epoch, count_per_epoch;
    double bytes_bound; /* bytes_per_epoch's (churn_fit_slope_bound); -1: none, 0 in levels */
    double share; /* of the growth of the rows that grow */
    churn_retained retained;
    uint64_t stack; /* its stack that grew most (held most, in levels) */
    const char *callers[CHURN_VERDICT_CALLERS]; /* named functions outward of it there, when
                                                   the row merges several stacks */
    size_t ncallers;
} churn_verdict_function;

/* What the split leaves outside the allocator and libchurn, apart: the part the program's
   own mappings explain (at most their virtual size's growth) and the rest, not traced. */
enum churn_verdict_part {
    CHURN_VERDICT_OWN_MMAP = CHURN_SPLIT_PARTS,
    CHURN_VERDICT_NOT_TRACED,
    CHURN_VERDICT_PARTS
};

typedef struct churn_verdict {
    churn_split split;                /* epochs 0: no split */
    double part[CHURN_VERDICT_PARTS]; /* the split's, then own mmap and not traced */
    double bound[CHURN_VERDICT_PARTS]; /* their slopes' bounds (base/fit.h); -1: none */
    int has_rss;                       /* without a split: the trends' slopes */
    double rss_per_epoch, live_per_epoch;
    double rss_bound, live_bound;
    churn_verdict_function functions[CHURN_VERDICT_FUNCTIONS];
    size_t nfunctions;
    churn_verdict_function mapping; /* the function whose own mmap calls grew most */
    int has_mapping;
    char file[256], run_as[256]; /* the executable's file and the name it was run as */
    int has_run_as;
    churn_untraced shim; /* the blind-spot detector's word, when it warned */
    int shim_said;
    const struct churn_runtime_heap *runtime; /* whose own heap the growth is in, or NULL */
    char *sentences[CHURN_VERDICT_SENTENCES];
    size_t nsentences;
} churn_verdict;

/* Whether a slope measurably grows (1) or shrinks (-1), or its bound covers zero (0); a slope
   without a bound (-1) is the difference of two readings, exact. */
int churn_verdict_direction(double slope, double bound);

void churn_verdict_make(churn_analysis *a, const churn_report_options *o, churn_verdict *v);
void churn_verdict_free(churn_verdict *v);

#endif
