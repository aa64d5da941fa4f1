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

#include "base/fit.h"
#include "analyze/lifetime.h"
#include "base/util.h"

typedef struct churn_callsite {
    uint64_t stack;
    int64_t live_count, live_bytes;  /* signed: a damaged trace may free more than it shows */
    uint64_t allocs, frees, alloc_bytes, free_bytes; /* events inside the window */
    uint64_t temporary;   /* allocations freed right after (peak.h's order), in the window */
    uint64_t lifetime[CHURN_LIFETIME_BUCKETS];
    uint64_t next_point;  /* first epoch whose sample is not in the fits yet */
    size_t parent;        /* index + 1 into the parent table's sites; 0: none */
    churn_fit count_fit, bytes_fit;
    /* What happened to the objects (churn_growth_retention): the epoch of the newest change,
       the live value when it began, the largest drop of the live count from the start to
       the end of one epoch before that one, and the value it dropped from. */
    uint64_t epoch_now, first_change; /* first_change: valid once changed is set */
    int changed;
    int64_t epoch_start_count, epoch_start_bytes;
    int64_t drop_count, drop_from;
    uint64_t drop_epoch;
    double drop_n, drop_sum; /* the count fit's points and their sum when that drop closed */
    /* --freed: frees inside that window, the epochs their objects were allocated in, and
       those allocated before the window began (what had accumulated, not the window's own
       temporaries) */
    uint64_t freed_count, freed_bytes, freed_from, freed_to;
    uint64_t freed_old_count, freed_old_bytes;
    /* A sampled trace (CHURN_SAMPLE_BYTES): the sampled allocations inside the window, and
       the sampled objects live now, that the estimates rest on (their error bounds). */
    uint64_t samples;
    int64_t live_samples;
} churn_callsite;

typedef struct churn_growth {
    churn_callsite *sites;
    size_t count, cap;
    size_t *slots;    /* open addressing: index + 1 into sites, 0 empty */
    size_t mask;
    size_t *direct;   /* stack id -> index + 1, for the dense ids the shim hands out */
    size_t direct_cap;
    uint64_t window_first, window_last; /* epochs sampled, inclusive */
    /* The objects carried in are the process's from before its trace began (the trace starts
       at its first segment: a forked child's copies of its parent's objects), not those of
       segments the ring overwrote. */
    int carried_inherited;
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

/* A change arrives in a later epoch than the site's newest: closes that epoch's drop. */
void churn_growth_epoch(churn_callsite *s, uint64_t epoch);

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
    if (epoch > s->epoch_now || !s->changed)
        churn_growth_epoch(s, epoch);
    if (remove) {
        s->live_count = churn_wrap_sub(s->live_count, count);
        s->live_bytes = churn_wrap_sub(s->live_bytes, bytes);
    } else {
        s->live_count = churn_wrap_add(s->live_count, count);
        s->live_bytes = churn_wrap_add(s->live_bytes, bytes);
    }
}

/* Counts samples of a sampled trace, in the callsite and its parents. */
static inline void churn_growth_samples(churn_growth *g, churn_callsite *s, int64_t live,
                                        uint64_t allocated)
{
    for (;;) {
        s->live_samples += live;
        s->samples += allocated;
        if (!s->parent)
            return;
        s = &g->parents->sites[s->parent - 1];
        g = g->parents;
    }
}

/* Sets the live value as it was at the end of `epoch` (for traces with only summaries). */
void churn_growth_set(churn_growth *g, churn_callsite *s, uint64_t epoch, int64_t count,
                      int64_t bytes);

/* Samples every callsite through the end of the window, and the parent table's with the
   same window; the caller first lowers an open window_last to the last epoch the trace
   reached. */
void churn_growth_finish(churn_growth *g);

/* How the trace ended, for what its live objects are called: no exit record (cut short, still
   running, detached), the process ended of its own accord (exit or a return from main,
   _exit, quick_exit, its last thread, exec), or it ended after a signal, caught or not. */
enum churn_ending { CHURN_ENDED_NOT, CHURN_ENDED_ITSELF, CHURN_ENDED_BY_SIGNAL };

/* What happened to a callsite's objects, from its live series (docs/analyzer.md):
   LEAKED        still live at the end of a trace whose process ended of its own accord, and
                 allocated in it (a callsite that allocated nothing in a trace that starts
                 with inherited objects, carried_inherited, is STEADY: a forked worker's
                 copies of its parent's objects are not the worker's leak);
   KEPT          accumulated (at least 1.5 times its mean live count over the epochs since
                 its first change, or since the bulk free below: a ramp is 2, objects in
                 flight 1) and live at the end of the last epoch before the teardown (the
                 epoch the exit ended, left out of the fits), all freed by it;
   RECLAIMED     half or more of what had accumulated (two objects at least) freed within one
                 epoch before the teardown: a collection, a flush (also given, with its epoch,
                 for a callsite that is then leaked or kept);
   LIVE          still live where the trace ends otherwise (cut short, detached, or after a
                 signal), or at the end of a window the process went on past: whether the
                 program would have freed them cannot be told;
   STEADY        none of these: freed as it goes, no accumulation that lasts. */
enum churn_retention { CHURN_RETENTION_STEADY, CHURN_RETENTION_LEAKED, CHURN_RETENTION_KEPT,
                       CHURN_RETENTION_RECLAIMED, CHURN_RETENTION_LIVE };
#define CHURN_RETENTION_KINDS 5
typedef struct churn_retained {
    enum churn_retention kind;
    int64_t count, bytes;      /* live at the end of the last epoch before the teardown */
    uint64_t reclaimed_epoch;  /* a bulk free (RECLAIMED's rule): its epoch and how many;
                                  reclaimed_count 0 when there was none */
    int64_t reclaimed_count;
} churn_retained;
/* ended: how the trace ended; the growth fit ends at g->window_last, and epochs after it are
   the teardown.  Call after churn_growth_finish. */
churn_retained churn_growth_retention(const churn_growth *g, const churn_callsite *s,
                                      enum churn_ending ended);
const char *churn_retention_name(enum churn_retention kind);

/* Counts a free inside the --freed window, of objects allocated in alloc_epoch (old: before
   the window began). */
void churn_growth_freed(churn_growth *g, churn_callsite *s, uint64_t alloc_epoch, int old,
                        uint64_t count, uint64_t bytes);
/* Callsites with frees in the --freed window, most bytes of old objects first, then most
   bytes; the caller frees the array. */
churn_callsite **churn_growth_sorted_by_freed(const churn_growth *g, size_t top, size_t *n);

/* Callsites sorted by bytes per epoch, descending (then live bytes, then stack id); the
   caller frees the array. */
churn_callsite **churn_growth_sorted(const churn_growth *g, size_t *n);

#endif
