/*
 * The per-epoch table: what the events say about each epoch of the window, next to what the
 * shim's own end-of-epoch summary (CHURN_REC_EPOCH_END) says.  One row per epoch that
 * appears in the trace, sorted by epoch once the trace is read (churn_epochs_settle): rows
 * are appended as epochs first appear and found through a hash index, so epochs that come
 * out of order (late events, or a crafted stream counting down) cost no more than in order.
 */
#ifndef CHURN_EPOCHS_H
#define CHURN_EPOCHS_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"

typedef struct churn_epoch_row {
    uint64_t epoch;
    /* from events tagged with this epoch */
    uint64_t allocs, frees, alloc_bytes, free_bytes;
    int64_t live_count, live_bytes; /* at the end of the epoch */
    int64_t live_usable_bytes;      /* the same objects' usable sizes, as the allocator counts */
    int has_live;
    /* from the summary */
    int has_summary;
    uint64_t start_ns, wall_ns, cpu_ns, rss_bytes, late_events;
    uint64_t s_allocs, s_frees, s_alloc_bytes, s_free_bytes, s_live_count, s_live_bytes;
    size_t counters_first, n_counters; /* into churn_epochs.counters */
    int counters_stale;      /* the counters are a reading counters_age_ns before the end */
    uint64_t counters_age_ns;
    uint64_t dropped; /* events the shim reported dropped while this epoch was current */
    uint64_t mapped_bytes; /* the program's own mappings at its end (regions.h; with events) */
} churn_epoch_row;

typedef struct churn_epochs {
    churn_epoch_row *rows;
    size_t count, cap;
    uint64_t *counters;
    size_t ncounters, counters_cap;
    size_t *index;      /* open addressing by epoch: row index + 1, 0 empty */
    size_t index_mask;
    int unsorted;       /* a row was appended after a later epoch's */
} churn_epochs;

churn_epoch_row *churn_epochs_find(churn_epochs *t, uint64_t epoch);

/* The row of an epoch, or NULL: a lookup that inserts nothing. */
const churn_epoch_row *churn_epochs_lookup(const churn_epochs *t, uint64_t epoch);

/* The row of an epoch, inserted (zeroed) if missing.  Valid until the next insertion.
   Epochs arrive almost always in order: the last row is the common answer. */
static inline churn_epoch_row *churn_epochs_row(churn_epochs *t, uint64_t epoch)
{
    if (t->count && t->rows[t->count - 1].epoch == epoch)
        return &t->rows[t->count - 1];
    return churn_epochs_find(t, epoch);
}

/* Sorts the rows by epoch: after the last insertion, before rows are read in order. */
void churn_epochs_settle(churn_epochs *t);

/* Stores a summary into its epoch's row; returns 0 if that epoch already had one. */
int churn_epochs_summary(churn_epochs *t, const churn_epoch_summary *s);

void churn_epochs_free(churn_epochs *t);

#endif
