/*
 * The per-epoch table: what the events say about each epoch of the window, next to what the
 * shim's own end-of-epoch summary (CHURN_REC_EPOCH_END) says, at a resolution that adapts so
 * that its size does not grow with the number of epochs (docs/analyzer.md, "Epoch buckets").
 *
 * A row is a bucket: the epochs e with e >> shift equal to its first epoch's, of which
 * [epoch, last] are the first and the last present in the trace.  A row of one epoch is
 * exact, as a per-epoch table's row.  While the table has room every row is one epoch; when
 * it fills, neighbouring rows merge pairwise and the width doubles.  A merged row holds exact
 * sums (events, bytes, wall and CPU time, late and dropped events, summaries' figures), the
 * state at the end of its newest epoch (live objects, RSS, counters), and the minimum, maximum
 * and sum of the per-epoch series (live bytes, RSS, wall time).
 *
 * Rows stay one epoch while a later record may still set what is not a sum (the live value
 * of an epoch is known once a later epoch's event appears, a summary comes after its epoch's
 * events): only rows older than `settled` minus a lag merge, so the whole-window fits
 * (trends.h) take every epoch's exact values before its row merges.
 *
 * New rows are appended and one-epoch rows found through a hash index, so epochs that come
 * out of order (late events, or a crafted stream counting down) cost no more than in order;
 * a merge sorts the rows first, and leaves them sorted: merged rows are found by binary
 * search among them.  Epochs almost always come in order: the last row is the common answer.
 */
#ifndef CHURN_EPOCHS_H
#define CHURN_EPOCHS_H

#include <stddef.h>
#include <stdint.h>

#include "base/fit.h"
#include "read/records.h"

/* Rows the table holds before neighbours merge; churn_epochs.keep_all lifts it. */
#define CHURN_EPOCH_ROWS 4096

typedef struct churn_epoch_row {
    uint64_t epoch, last; /* the first and the last epoch of the row present in the trace */
    unsigned shift;       /* width log2: the row holds the epochs e with e >> shift equal */
    int sealed;           /* its epochs' values are in the window's fits; may merge */
    /* from events tagged with these epochs: sums */
    uint64_t allocs, frees, alloc_bytes, free_bytes;
    int64_t live_count, live_bytes; /* at the end of live_epoch, the newest with a live value */
    int64_t live_usable_bytes;      /* the same objects' usable sizes, as the allocator counts */
    int has_live;
    uint64_t live_epoch, n_live;    /* epochs with a live value */
    int64_t live_min, live_max;     /* live bytes over those epochs */
    double live_sum;                /* their sum: the mean is live_sum / n_live */
    /* from the summaries: has_summary when any of its epochs has one, n_summary how many */
    int has_summary;
    uint64_t n_summary, summary_epoch; /* summary_epoch: the newest, whose state is kept */
    uint64_t start_ns;                 /* of the first epoch with a summary */
    uint64_t wall_ns, cpu_ns, late_events; /* sums */
    uint64_t wall_min, wall_max;       /* one epoch's wall time */
    uint64_t rss_bytes, rss_min, rss_max; /* rss_bytes at summary_epoch's end */
    uint64_t s_allocs, s_frees, s_alloc_bytes, s_free_bytes; /* sums */
    uint64_t s_live_count, s_live_bytes;                      /* at summary_epoch's end */
    /* the events' live objects and bytes where summary_epoch's EPOCH_END lies in the trace:
       the same point as s_live_count, s_live_bytes (crosscheck.c) */
    int64_t at_summary_count, at_summary_bytes;
    size_t counters_first, n_counters; /* into churn_epochs.counters: summary_epoch's */
    int counters_stale;      /* the counters are a reading counters_age_ns before the end */
    uint64_t counters_age_ns;
    uint64_t dropped; /* events the shim reported dropped while these epochs were current */
    uint64_t mapped_bytes; /* the program's own mappings at summary_epoch's end (regions.h) */
} churn_epoch_row;

/* The window's whole-epoch fits, fed one epoch at a time in epoch order (trends.h). */
typedef struct churn_epoch_fits {
    churn_fit live, rss, wall;
    churn_fit2 wall_live;
} churn_epoch_fits;

typedef struct churn_epochs {
    churn_epoch_row *rows;
    size_t count, cap;
    uint64_t *counters;
    size_t ncounters, counters_cap;
    size_t *index;     /* one-epoch rows by epoch, open addressing: row index + 1, 0 empty */
    size_t index_mask;
    size_t nsorted;    /* rows[0, nsorted) are sorted and hold every merged row */
    int unsorted;      /* a row was appended after a later epoch's */
    int keep_all;      /* --all-epochs: one row per epoch, however many */
    unsigned shift;    /* the widest rows' width log2 (0: every row is one epoch) */
    uint64_t settled;  /* rows of epochs before it minus a lag have their final values */
    uint64_t epochs;   /* epochs with a row, counted as they first appear */
    uint64_t max_epoch;
    /* epochs with a summary, as runs [a, b]: a second summary of one is a duplicate */
    uint64_t (*summaries)[2];
    size_t nsummaries, summaries_cap;
    churn_epoch_fits fits; /* of the sealed rows' epochs inside the fit window */
    /* The fit window (window.h), when it is known before the pass: rows outside it stay
       out of the fits.  Without it, every sealed row is in them. */
    int has_fit;
    uint64_t fit_first, fit_last;
    /* Exact copies of rows that merged: the window's first epoch and the one of most RSS,
       which the fragmentation rows name (n_counters counters each in kept_counters). */
    churn_epoch_row kept[2];
    int has_kept[2];
    uint64_t *kept_counters[2];
} churn_epochs;

/* The row holding an epoch, inserted (zeroed, one epoch) if missing.  Valid until the next
   insertion, which may merge rows. */
churn_epoch_row *churn_epochs_row(churn_epochs *t, uint64_t epoch);

/* An epoch's row when it describes that very epoch's state (the row is the epoch, or the
   epoch is its newest summary's), else a kept copy of it, else NULL.  Inserts nothing. */
const churn_epoch_row *churn_epochs_lookup(const churn_epochs *t, uint64_t epoch);

/* The row holding an epoch, merged or not, or NULL.  Inserts nothing. */
const churn_epoch_row *churn_epochs_containing(const churn_epochs *t, uint64_t epoch);

/* The counters of a row from churn_epochs_row or churn_epochs_lookup. */
const uint64_t *churn_epochs_counters(const churn_epochs *t, const churn_epoch_row *r);

/* Stores a summary into its epoch's row; returns it, or NULL if that epoch already had one. */
churn_epoch_row *churn_epochs_summary(churn_epochs *t, const churn_epoch_summary *s);

/* Sets an epoch's live value (replacing it: an epoch's value is the last set). */
void churn_epochs_set_live(churn_epochs *t, uint64_t epoch, int64_t count, int64_t bytes,
                           int64_t usable);

/* Gives the rows of epochs in (after, before) that have no live value yet the value given;
   with from_start set, every such row before `before`. */
void churn_epochs_fill_live(churn_epochs *t, int from_start, uint64_t after, uint64_t before,
                            int64_t count, int64_t bytes, int64_t usable);

/* Sorts the rows by epoch: before rows are read in order. */
void churn_epochs_sort(churn_epochs *t);

/* Rows before epoch (minus the lag) may merge from now on. */
static inline void churn_epochs_settle_to(churn_epochs *t, uint64_t epoch)
{
    if (epoch > t->settled)
        t->settled = epoch;
}

/* Rows stop changing: the window's fits through last_epoch (the growth fits' window) take
   the rows not sealed yet, and if rows ever merged, the rest merge to the same width. */
void churn_epochs_finish(churn_epochs *t, uint64_t last_epoch);

/* The rows are one epoch each. */
static inline int churn_epochs_exact(const churn_epochs *t)
{
    return t->shift == 0;
}

void churn_epochs_free(churn_epochs *t);

#endif
