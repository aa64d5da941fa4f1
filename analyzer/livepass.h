/*
 * The live-set pass: the heap events of the trace applied to the address-keyed live set
 * (live.h), and nothing else.  It needs only the events' own fields, never the counting the
 * analysis does, so it runs over the same record stream on a thread of its own
 * (pipeline.h); the analysis takes its results once both are done.
 */
#ifndef CHURN_LIVEPASS_H
#define CHURN_LIVEPASS_H

#include <stdint.h>

#include "live.h"
#include "records.h"

typedef struct churn_live_pass {
    int has_last;
    uint64_t last;              /* events of later epochs are ignored, as by the analysis */
    churn_live live;
    uint64_t unmatched_frees, mismatched_frees;
    uint64_t unmatched_bytes;   /* of the unmatched frees: they reduce the carried state */
} churn_live_pass;

void churn_live_pass_init(churn_live_pass *p, int has_last, uint64_t last);
void churn_live_pass_free(churn_live_pass *p);

/* The records.h visitor; ctx is the churn_live_pass. */
void churn_live_pass_record(void *ctx, const churn_record *r);

#endif
