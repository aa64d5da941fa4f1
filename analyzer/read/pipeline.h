/*
 * Running the used segments of a trace through the analysis on two threads.  A worker thread
 * decompresses each segment ahead of the main thread, which decodes it once: records go to
 * the analysis, and the live-set operations of its heap events go back to the worker in
 * chunks, which it applies to the live set (livepass.h) while the main thread goes on.  At
 * most CHURN_PIPELINE_SLOTS decompressed segments and CHURN_PIPELINE_CHUNKS chunks of
 * CHURN_PIPELINE_CHUNK_OPS operations exist at once.
 */
#ifndef CHURN_PIPELINE_H
#define CHURN_PIPELINE_H

#include <stddef.h>

#include "heap/livepass.h"
#include "read/reader.h"
#include "read/records.h"
#include "base/warnings.h"

#define CHURN_PIPELINE_SLOTS 2
#define CHURN_PIPELINE_CHUNKS 4
#define CHURN_PIPELINE_CHUNK_OPS 16384

/* Called on the main thread before (after = 0) and after (after = 1) segment i's records. */
typedef void (*churn_segment_fn)(void *ctx, size_t segment, int after);

/* On the main thread: seg(seg_ctx, i, 0), fn(ctx, record) for each record of segment i
   (records.h), seg(seg_ctx, i, 1), for every used segment in order.  Warnings about skipped
   segments and malformed records go to w, in segment order.  Returns when the live pass is
   complete. */
void churn_pipeline_run(churn_trace *t, churn_warnings *w, churn_record_fn fn, void *ctx,
                        churn_segment_fn seg, void *seg_ctx, churn_live_pass *live);

#endif
