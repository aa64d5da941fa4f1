/*
 * Where RSS growth goes (docs/analyzer.md, "The verdict"): the least-squares slope, over the
 * fit window, of RSS and of each part of its split (fragment.h), all over the same epochs, so
 * that the parts add up to the RSS slope exactly.  Epochs whose split is not known (their RSS
 * reading older than their live set, the heap not resident) are left out; free-resident
 * memory needs the allocator's books, so when at least two epochs have them only those are
 * fitted, else it stays inside the outside part (free_with_outside).  A window with fewer than
 * two such epochs gives levels instead: the parts of its last known epoch.  Each slope has its
 * bound (base/fit.h), widened when its residuals go in runs; the bounds do not add up as the
 * slopes do.
 */
#ifndef CHURN_SPLIT_H
#define CHURN_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/fragment.h"

enum churn_split_part {
    CHURN_SPLIT_RSS,
    CHURN_SPLIT_LIVE,
    CHURN_SPLIT_SLACK,
    CHURN_SPLIT_PINNED,
    CHURN_SPLIT_FREE,     /* free but resident, by the allocator's books */
    CHURN_SPLIT_OVERHEAD, /* the heap the books count less the parts above (the residual) */
    CHURN_SPLIT_OUTSIDE,  /* RSS outside the allocator and libchurn */
    CHURN_SPLIT_LIBCHURN, /* libchurn's own memory */
    CHURN_SPLIT_MAPPED,   /* the program's own mappings (virtual size; not a part of RSS) */
    CHURN_SPLIT_PARTS
};

typedef struct churn_split {
    size_t epochs;         /* epochs fitted; 0: none known (no events, no model, no RSS) */
    int free_with_outside; /* no books: free memory is inside outside */
    int levels;            /* the parts of one epoch (first = last), not slopes */
    uint64_t first, last;  /* the epochs fitted */
    double v[CHURN_SPLIT_PARTS];
    double bound[CHURN_SPLIT_PARTS]; /* each slope's (churn_fit_slope_bound); -1: none */
    double unmapped_bound;           /* the bound of the slope of OUTSIDE less MAPPED */
} churn_split;

/* The split over the epochs first..last of f's rows. */
churn_split churn_split_fit(const churn_fragmentation *f, uint64_t first, uint64_t last);

#endif
