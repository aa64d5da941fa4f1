/*
 * The live-set pass: the heap events of the trace applied to the address-keyed live set
 * (live.h), and nothing else.  It needs only the events' own fields, never the counting the
 * analysis does, so it runs on a thread of its own (pipeline.h): the decoder, which runs once
 * on the main thread, hands it the events' live-set operations in chunks, and the analysis
 * takes its results once both are done.
 *
 * An allocation freed a little later by a short free (FREE_SHORT) is a pair of operations
 * that cancel out.  The shim writes a short free only while its segment's address map still
 * holds that very allocation, so no other allocation or free touched the address in between;
 * the pair's only effect on the set is that the allocation displaces an object still live at
 * its address.  When both ends of such a pair fall in the chunk being filled, the decoder
 * turns the insertion into CHURN_LIVE_VACATE, which does just that, and drops the removal.
 */
#ifndef CHURN_LIVEPASS_H
#define CHURN_LIVEPASS_H

#include <stddef.h>
#include <stdint.h>

#include "heap/early.h"
#include "heap/live.h"
#include "heap/peak.h"
#include "heap/spans.h"

enum churn_live_op_kind {
    CHURN_LIVE_INSERT = 0, /* the object is allocated (skipped after the window's end) */
    CHURN_LIVE_REMOVE = 1, /* a free with these fields (the allocation's epoch) */
    CHURN_LIVE_VACATE = 2, /* an object live at this address is displaced */
    CHURN_LIVE_EPOCH = 3,  /* the epoch in the object's epoch field ended here */
    /* [addr, addr + size) is an arena in units of epoch bytes, or with 0 no longer one
       (CHURN_MAP_ARENA) */
    CHURN_LIVE_ARENA = 4,
};

/* Operations in stream order: objects[i] with kinds[i]. */
typedef struct churn_live_ops {
    churn_object *objects;
    uint8_t *kinds;
    size_t len, cap;
    uint64_t first;         /* serial number of objects[0] among all operations of the run */
} churn_live_ops;

/* Where the decoder puts operations.  Its owner installs an empty chunk whenever full()
   is called; the decoder only appends and rewrites insertions it put in the current chunk. */
typedef struct churn_live_sink {
    churn_live_ops *chunk;
    int has_last;
    uint64_t last;          /* events of later epochs are not applied, as by the analysis */
    int epoch_marks;        /* mark the end of every epoch (CHURN_LIVE_EPOCH) and pass the
                               arenas on (CHURN_LIVE_ARENA): the spans need both */
    uint32_t fence;         /* low bits of the serial number after the last mark */
    void (*full)(void *ctx);
    void *ctx;
} churn_live_sink;

typedef struct churn_live_pass {
    int has_last;
    uint64_t last;
    churn_liveset live;
    uint64_t unmatched_frees, mismatched_frees;
    uint64_t unmatched_bytes;   /* of the unmatched frees: they reduce the carried state */
    churn_early early;          /* frees waiting for their allocation (early.h) */
    churn_spans *spans;         /* with an allocator model: span occupancy, per epoch */
    churn_peak *peak;           /* the decoder's peak tracker (peak.h), on the main thread */
    /* With spans: the objects freed since the newest epoch mark, and those freed between the
       two newest marks (epoch `marked`), so that what the last epoch (a teardown) freed can
       be put back and the survivors ranked as they were before it (fragment.h).  Past
       CHURN_TORN_MAX objects in an epoch it gives up (torn_full). */
    churn_object *torn, *torn_prev;
    size_t ntorn, ntorn_prev, torn_cap, torn_prev_cap;
    uint64_t marked;
    int has_marked, torn_full, torn_prev_full;
} churn_live_pass;

#define CHURN_TORN_MAX (1u << 20)

/* The objects the trace's last epoch (epoch last) freed, in *objs and *n; 0 when they are not
   known (no spans, more than CHURN_TORN_MAX). */
int churn_live_pass_torn(const churn_live_pass *p, uint64_t last, const churn_object **objs,
                         size_t *n);

/* spans (may be NULL) follows the live set from here on; it stays the caller's. */
void churn_live_pass_init(churn_live_pass *p, int has_last, uint64_t last, churn_spans *spans);
void churn_live_pass_free(churn_live_pass *p);

/* Applies a chunk of operations, in order. */
void churn_live_pass_apply(churn_live_pass *p, const churn_live_ops *ops);

/* After the last chunk: frees still waiting for their allocation count as unmatched. */
void churn_live_pass_settle(churn_live_pass *p);

#endif
