/*
 * Whole-window trends: how live bytes, RSS and epoch duration move per epoch, and whether
 * slow epochs go with a large heap.  The fits take every epoch's own values (churn_epochs
 * feeds them before rows merge), so they are the same whatever the table's resolution; the
 * rank correlation needs every pair at once and is over the table's rows, buckets' means
 * when rows are merged.
 */
#ifndef CHURN_TRENDS_H
#define CHURN_TRENDS_H

#include "analyze/epochs.h"

typedef struct churn_trends {
    double live_bytes_per_epoch, live_bytes_r2;
    double rss_bytes_per_epoch, rss_bytes_r2;
    double wall_ns_per_epoch, wall_ns_r2;
    double duration_vs_live_correlation; /* Pearson r of wall time and live bytes */
    double duration_vs_live_rank_correlation; /* Spearman's rho of the same */
    size_t rank_rows;  /* the rows it is over */
    int rank_of_buckets; /* those rows are buckets of epochs (their means), not epochs */
} churn_trends;

/* Over the epochs first_epoch..last_epoch, the growth fits' window (the steady window, or the
   one the options name, without the exit's epoch), which the table's fits were given too. */
churn_trends churn_trends_compute(const churn_epochs *epochs, uint64_t first_epoch,
                                  uint64_t last_epoch);

#endif
