/*
 * The heap's high-water mark, in the trace's order of events (docs/format.md, "Order of
 * events"): requested bytes live after each event, their maximum, the epoch and live count
 * there, and each stack's live bytes and count at that moment.
 *
 * The decoder applies every heap event here as it decodes it, before any of them are
 * counted in bulk (records.h), so the order is the stream's.  Each stack's figures at the
 * peak are kept without copying them at every new maximum: a stack remembers its value from
 * before its first change after the latest maximum (ver), which is its value at that
 * maximum; a stack unchanged since has its current value there.  O(1) an event.
 */
#ifndef CHURN_PEAK_H
#define CHURN_PEAK_H

#include <stddef.h>
#include <stdint.h>

#include "base/util.h"

typedef struct churn_peak_site {
    uint64_t stack;
    int64_t bytes, count;       /* live now */
    int64_t at_bytes, at_count; /* live at the maximum numbered at_ver */
    uint64_t at_ver;
} churn_peak_site;

typedef struct churn_peak {
    int64_t bytes, count;       /* live after the last event applied */
    int64_t peak_bytes, peak_count;
    uint64_t peak_epoch;
    int has_peak;
    uint64_t ver;               /* maxima so far */
    int has_first, has_last;    /* the window: a maximum only counts inside it */
    uint64_t first, last;
    churn_peak_site *sites;     /* index 0 unused */
    size_t nsites, cap;
    uint32_t *index;            /* open addressing by stack: site index, 0 = empty */
    size_t index_mask;
    /* Within an epoch, threads' events come in runs in the trace (format.md, "Order of
       events"), so the stream's maximum inside an epoch where more than one thread allocated
       or freed is one possible order's, not necessarily the process's.  Per epoch: its first
       thread, whether another one came, the live bytes it began with, the bytes allocated in
       it and the stream's maximum in it; folded into the bounds of the process's peak when
       the epoch changes (churn_peak_bounds). */
    uint64_t tid;               /* of the events being applied (THREAD records) */
    uint64_t ep, ep_tid;
    int ep_open, ep_multi;
    int64_t ep_start, ep_alloc, ep_max;
    int64_t lower, upper;       /* of the epochs folded so far */
    int folded;
} churn_peak;

/* The thread of the events that follow. */
static inline void churn_peak_thread(churn_peak *p, uint64_t tid)
{
    p->tid = tid;
}

void churn_peak_epoch_change(churn_peak *p, uint64_t epoch);

/* The process's peak lies in [*lower, *upper]: each single-threaded epoch's maximum is
   exact, and an epoch where threads interleave lies between its end points and what it
   began with plus what it allocated.  Equal bounds: the peak is exact. */
void churn_peak_bounds(churn_peak *p, int64_t *lower, int64_t *upper);

/* A zeroed churn_peak is ready (no window); this one counts maxima in the window only. */
void churn_peak_init(churn_peak *p, int has_first, uint64_t first, int has_last, uint64_t last);
void churn_peak_free(churn_peak *p);

/* The site of a stack, made on first use. */
uint32_t churn_peak_site_of(churn_peak *p, uint64_t stack);

static inline int churn_peak_counts_at(const churn_peak *p, uint64_t epoch)
{
    return (!p->has_first || epoch >= p->first) && (!p->has_last || epoch <= p->last);
}

/* The state now is a maximum if the window holds epoch and it is higher than the last. */
void churn_peak_new_max(churn_peak *p, uint64_t epoch);
/* Before the window's first event: the state it starts from is its first maximum. */
void churn_peak_enter(churn_peak *p, uint64_t epoch);

/* An allocation (freed 0) or free (freed 1) of size bytes at site, in epoch.  A damaged
   trace's sizes wrap the sums (util.h), as every other counter does. */
static inline void churn_peak_apply(churn_peak *p, uint32_t site, uint64_t size, int freed,
                                    uint64_t epoch)
{
    if (__builtin_expect(!p->has_peak, 0))
        churn_peak_enter(p, epoch);
    if (__builtin_expect(!p->ep_open || epoch != p->ep, 0))
        churn_peak_epoch_change(p, epoch);
    else if (__builtin_expect(p->tid != p->ep_tid, 0))
        p->ep_multi = 1;
    churn_peak_site *s = &p->sites[site];
    if (s->at_ver != p->ver) {
        s->at_bytes = s->bytes;
        s->at_count = s->count;
        s->at_ver = p->ver;
    }
    if (freed) {
        s->bytes = churn_wrap_sub(s->bytes, size);
        s->count = churn_wrap_sub(s->count, 1);
        p->bytes = churn_wrap_sub(p->bytes, size);
        p->count = churn_wrap_sub(p->count, 1);
        return;
    }
    s->bytes = churn_wrap_add(s->bytes, size);
    s->count = churn_wrap_add(s->count, 1);
    p->bytes = churn_wrap_add(p->bytes, size);
    p->count = churn_wrap_add(p->count, 1);
    p->ep_alloc = churn_wrap_add(p->ep_alloc, size);
    if (p->bytes > p->ep_max)
        p->ep_max = p->bytes;
    if (p->bytes > p->peak_bytes)
        churn_peak_new_max(p, epoch);
}

/* A stack's live bytes and count at the maximum. */
static inline void churn_peak_site_at(const churn_peak *p, const churn_peak_site *s,
                                      int64_t *bytes, int64_t *count)
{
    int changed = s->at_ver == p->ver;
    *bytes = changed ? s->at_bytes : s->bytes;
    *count = changed ? s->at_count : s->count;
}

#endif
