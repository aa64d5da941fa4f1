/*
 * The steady window (docs/analyzer.md, "The steady window"): the epochs between a program's
 * start-up and its teardown, found from the series themselves, over which slopes and rankings
 * are fitted by default.  Start-up fills caches and pools, a teardown frees them: both move
 * the live bytes and RSS far more than the units of work do, and a least-squares slope over
 * the whole run is theirs (nginx reloads: hundreds of bytes per epoch for a leak of 72).
 *
 * For each series (live bytes at each row's end, RSS at each row's end) a robust line is
 * drawn: its slope the median of the slopes between points half the series apart, its
 * intercept the median of what is left; epochs far from it (more than four robust standard
 * deviations of the residuals, and more than a floor) are outliers.  The start-up is the run
 * of outliers the series begins with, the teardown the run of outliers below the line it
 * ends with (growth at the end is never a teardown); each at most a quarter of the epochs.
 * The window is what both series leave.
 */
#ifndef CHURN_WINDOW_H
#define CHURN_WINDOW_H

#include <stdint.h>

#include "analyze/epochs.h"

enum churn_steady_how {
    CHURN_STEADY_FOUND,  /* found from the series (the default) */
    CHURN_STEADY_EPOCHS, /* --epochs named it */
    CHURN_STEADY_ALL,    /* --all-epochs: every epoch */
};

typedef struct churn_steady {
    enum churn_steady_how how;
    uint64_t first, last;           /* the epochs slopes and rankings are fitted over */
    int has_start_up, has_teardown; /* epochs left out before and after it */
    uint64_t start_up_first, start_up_last, teardown_first, teardown_last;
    int has_exit_epoch; /* the epoch the exit ended, left out of every fit */
    uint64_t exit_epoch;
} churn_steady;

/* The steady window among the table's rows of epochs first..last (the fits' window without
   the exit's epoch).  Fewer than CHURN_STEADY_MIN rows with values: that window, unchanged. */
#define CHURN_STEADY_MIN 8
churn_steady churn_steady_find(const churn_epochs *t, uint64_t first, uint64_t last);

/* One window for two runs of a program (--diff), so that what a change did not touch compares
   equal: the epochs both steady windows hold, when both were found and they differ; 1 with it
   in *common, else 0 (each run keeps its own). */
int churn_steady_common(const churn_steady *a, const churn_steady *b, churn_steady *common);

/* The window leaves epochs out: a pass with it as the fit window gives other slopes. */
static inline int churn_steady_trims(const churn_steady *s)
{
    return s->has_start_up || s->has_teardown;
}

#endif
