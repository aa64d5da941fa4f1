/*
 * Span occupancy, kept incrementally as objects enter and leave the live set: for every unit
 * of the allocator model (a span, slab or page) that holds a live object, how many live
 * objects it holds and their weight (bytes in it).  The bytes of all occupied units are one
 * running sum, so an estimate for every epoch costs one snapshot, never a rescan.
 */
#ifndef CHURN_SPANS_H
#define CHURN_SPANS_H

#include <stddef.h>
#include <stdint.h>

#include "heap/live.h"
#include "heap/model.h"

typedef struct churn_span {
    uint64_t key;          /* the unit's start; 0 = empty slot */
    uint64_t span_bytes;
    uint64_t weight;       /* bytes of live objects in it */
    uint64_t count;        /* live objects in it */
} churn_span;

/* The live set as the model sees it at the end of an epoch, or of a bucket of epochs: the
   snapshots are kept at the epochs table's resolution (epochs.h), so their memory does not
   grow with the epochs.  The first snapshot is always its own epoch's. */
typedef struct churn_span_snapshot {
    uint64_t epoch;        /* the newest epoch of the bucket: the state below is its end's */
    uint64_t live_count, live_bytes, live_usable;
    uint64_t span_bytes;   /* bytes of every unit holding a live object, and owned pages */
    uint64_t spans;        /* shared units holding a live object */
    uint64_t first;        /* the oldest epoch of the bucket */
    /* The most pinned bytes (span_bytes - live_usable) at the end of one of the bucket's
       epochs before `epoch`, and that epoch; pinned_epoch UINT64_MAX when there is none. */
    int64_t pinned_max;
    uint64_t pinned_epoch;
} churn_span_snapshot;

/* Snapshots kept before neighbours merge: twice the epochs table's rows, so a bucket of
   snapshots is never wider than the epochs table's bucket that holds it. */
#define CHURN_SPAN_SNAPSHOTS 8192

/* An arena of an allocator traced beside the one the model is of (CPython's pymalloc): its
   objects sit in units of `unit` bytes aligned to it, whatever the model says. */
typedef struct churn_arena {
    uint64_t lo, hi, unit;
} churn_arena;

typedef struct churn_spans {
    churn_model model;
    churn_arena *arenas; /* sorted by address, disjoint */
    size_t narenas, arenas_cap;
    churn_span *slots;
    size_t mask, used;
    unsigned shift;
    uint64_t live_count, live_bytes, live_usable, span_bytes;
    churn_span_snapshot *snaps;
    size_t nsnaps, snaps_cap;
    unsigned snap_shift; /* a snapshot holds the epochs e with e >> snap_shift equal */
    int keep_all;        /* --all-epochs: a snapshot per epoch, however many */
    int has_first;       /* epochs before first are not snapshotted (the window's) */
    uint64_t first;
} churn_spans;

void churn_spans_init(churn_spans *s, const churn_model *m);
void churn_spans_free(churn_spans *s);

void churn_spans_add(churn_spans *s, const churn_object *o);
void churn_spans_remove(churn_spans *s, const churn_object *o);

/* [addr, addr + len) becomes an arena in units of unit bytes; with unit 0 it is one no more.
   Objects added inside an arena are placed in its units, others by the model; an object's
   removal finds the units its addition took even when the arena came or went in between. */
void churn_spans_arena(churn_spans *s, uint64_t addr, uint64_t len, uint64_t unit);

/* Records the state as the end of an epoch (a later snapshot of the same epoch replaces it). */
void churn_spans_snapshot(churn_spans *s, uint64_t epoch);

/* The epoch of a snapshot's bucket whose end has the most pinned bytes, and those bytes. */
uint64_t churn_span_snapshot_most_pinned(const churn_span_snapshot *snap, int64_t *pinned);

/* The unit a key names, or NULL. */
const churn_span *churn_spans_find(const churn_spans *s, uint64_t key);

/* The bytes an object accounts for: its share of every unit it sits in (by weight) plus its
   own pages.  Summed over the live set this is span_bytes. */
double churn_spans_share(const churn_spans *s, const churn_object *o);

#endif
