/*
 * Per-callsite statistics: live objects and bytes, activity inside the analyzed window,
 * lifetimes, and the least-squares growth of live count and bytes per epoch.
 *
 * A callsite's live value is sampled at the end of every epoch of the window, including
 * epochs in which it did nothing.  Those samples are added lazily: when the value changes,
 * the epochs since the last change join the fit as one constant block (fit.h), so the cost
 * is proportional to activity, not to callsites x epochs.
 */
#ifndef CHURN_GROWTH_H
#define CHURN_GROWTH_H

#include <stddef.h>
#include <stdint.h>

#include "fit.h"
#include "lifetime.h"
#include "util.h"

typedef struct churn_callsite {
    uint64_t stack;
    int64_t live_count, live_bytes;  /* signed: a damaged trace may free more than it shows */
    uint64_t allocs, frees, alloc_bytes, free_bytes; /* events inside the window */
    uint64_t lifetime[CHURN_LIFETIME_BUCKETS];
    uint64_t next_point;  /* first epoch whose sample is not in the fits yet */
    size_t parent;        /* index + 1 into the parent table's sites; 0: none */
    churn_fit count_fit, bytes_fit;
} churn_callsite;

typedef struct churn_growth {
    churn_callsite *sites;
    size_t count, cap;
    size_t *slots;    /* open addressing: index + 1 into sites, 0 empty */
    size_t mask;
    size_t *direct;   /* stack id -> index + 1, for the dense ids the shim hands out */
    size_t direct_cap;
    uint64_t window_first, window_last; /* epochs sampled, inclusive */
    /* A table that sums groups of these callsites (functions.h), or NULL: each new callsite
       asks parent_of for its group's id (0: none), and passes every change on to it. */
    struct churn_growth *parents;
    uint64_t (*parent_of)(void *ctx, uint64_t stack);
    void *parent_ctx;
} churn_growth;

void churn_growth_init(churn_growth *g, uint64_t window_first, uint64_t window_last);
void churn_growth_free(churn_growth *g);

churn_callsite *churn_growth_lookup(churn_growth *g, uint64_t stack);
void churn_growth_sample(churn_growth *g, churn_callsite *s, uint64_t until);

/* The callsite of a stack id, created with zero live objects on first use.  The pointer is
   valid until the next call that may create a callsite.  Stack ids are dense (1, 2, ... in
   the shim), so a known one is an array index. */
static inline churn_callsite *churn_growth_site(churn_growth *g, uint64_t stack)
{
    if (stack < g->direct_cap && g->direct[stack])
        return &g->sites[g->direct[stack] - 1];
    return churn_growth_lookup(g, stack);
}

/* Adds (or with remove set, takes away) objects during `epoch`: the samples of the epochs
   before it keep the old value. */
static inline void churn_growth_change(churn_growth *g, churn_callsite *s, uint64_t epoch,
                                       int remove, uint64_t count, uint64_t bytes)
{
    if (s->parent)
        churn_growth_change(g->parents, &g->parents->sites[s->parent - 1], epoch, remove, count,
                            bytes);
    if (epoch > s->next_point)
        churn_growth_sample(g, s, epoch);
    if (remove) {
        s->live_count = churn_wrap_sub(s->live_count, count);
        s->live_bytes = churn_wrap_sub(s->live_bytes, bytes);
    } else {
        s->live_count = churn_wrap_add(s->live_count, count);
        s->live_bytes = churn_wrap_add(s->live_bytes, bytes);
    }
}

/* Sets the live value as it was at the end of `epoch` (for traces with only summaries). */
void churn_growth_set(churn_growth *g, churn_callsite *s, uint64_t epoch, int64_t count,
                      int64_t bytes);

/* Samples every callsite through the end of the window, and the parent table's with the
   same window; the caller first lowers an open window_last to the last epoch the trace
   reached. */
void churn_growth_finish(churn_growth *g);

/* Callsites sorted by bytes per epoch, descending (then live bytes, then stack id); the
   caller frees the array. */
churn_callsite **churn_growth_sorted(const churn_growth *g, size_t *n);

#endif
