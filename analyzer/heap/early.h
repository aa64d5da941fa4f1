/*
 * Frees that came before their own allocation in the stream: another thread allocated the
 * object, and the writer drained the freeing thread's ring first.  Such a free waits here,
 * by address, for its allocation (same address, size, stack and epoch), which it then
 * cancels.  Several frees of one address may wait at once (the allocator handed the address
 * out again, and the same two threads did it again before a drain): the oldest matching one
 * goes first.  Under node hundreds wait at once (V8 threads free what the main thread
 * allocated); a fixed direct-mapped table pushed them out by collision and counted them as
 * frees of objects never allocated.  What waits is either such a free, bounded by the
 * events the shim had not drained yet, or a free of an object from before the trace (or its
 * retained part), bounded by what was live then: never by the trace's length.
 */
#ifndef CHURN_EARLY_H
#define CHURN_EARLY_H

#include <stddef.h>

#include "heap/live.h"

typedef struct churn_early {
    churn_object *slots;  /* open addressing by address; addr 0 = empty */
    size_t mask;          /* capacity - 1 */
    size_t count;
} churn_early;

void churn_early_init(churn_early *e);
void churn_early_free(churn_early *e);

/* Frees that may wait at one address.  Each new one is compared with those already there,
   so a crafted stream of frees of one address would cost their square; past this many the
   free is not kept (an unmatched free). */
#define CHURN_EARLY_SAME_MAX 256

/* Adds a waiting free, after those of the same address already waiting; returns 0 (and
   keeps nothing) when CHURN_EARLY_SAME_MAX already wait there. */
int churn_early_put(churn_early *e, const churn_object *freed);

/* The oldest waiting free of allocation o (same address, size, stack and epoch) is taken out
   and the pair cancels: returns whether there was one. */
int churn_early_cancel(churn_early *e, const churn_object *o);

/* Takes out every waiting free, handing each to fn: they freed objects from before the trace. */
void churn_early_drain(churn_early *e, void (*fn)(void *ctx, const churn_object *o), void *ctx);

#endif
