/*
 * What `churn watch` shows and `churn serve`'s /metrics exports of one process at a moment:
 * the offline analysis's figures of everything read so far (follow.h's finished state),
 * flattened into one fixed-size record that a child process writes back.
 */
#ifndef CHURN_LIVE_VIEW_H
#define CHURN_LIVE_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "live/follow.h"

#define CHURN_VIEW_TOP_MAX 100

typedef struct churn_view_fn {
    char name[256];     /* the function as the reports name it, cut to fit */
    char module[128];   /* basename, "" when unknown */
    char caller[128];   /* of a function without a name, the named one that reached it */
    char type[128];     /* the C++ type its callsites construct most, or "" */
    char retention[24]; /* growth.h's class name */
    int64_t live_bytes, live_count;
    double bytes_per_epoch; /* the growth fit of its live bytes */
    uint64_t allocs, alloc_bytes;
} churn_view_fn;

typedef struct churn_view {
    uint64_t first_epoch, last_epoch;
    int64_t live_bytes, live_count;
    uint64_t allocs, frees, alloc_bytes, free_bytes;
    uint64_t dropped_events;
    uint64_t sample_bytes, stack_sample; /* CHURN_SAMPLE_BYTES (0: off), CHURN_STACK_SAMPLE */
    /* The RSS split of the newest epoch with an RSS reading (fragment.h's row); parts
       without their has_ flag are not known for that epoch. */
    int has_split;
    uint64_t split_epoch;
    int has_rss, has_free, has_outside, outside_with_free, has_untraced, has_own;
    uint64_t rss, live, slack, free_resident, untraced, own;
    int64_t pinned, outside;
    /* trends.h over every epoch read (the exit's tail left out, as offline) */
    double live_per_epoch, live_r2, rss_per_epoch, rss_r2;
    size_t warnings;
    size_t nfns;
    churn_view_fn fns[CHURN_VIEW_TOP_MAX]; /* by growth, as the report ranks functions */
} churn_view;

/* Starts computing the view of f's state as it is now, with its top (at most
   CHURN_VIEW_TOP_MAX) functions, in a child (churn_follow_finish_start): the follower reads
   on meanwhile.  NULL with err set when it cannot. */
churn_follow_job *churn_view_start(churn_follow *f, size_t top, char *err, size_t errlen);
/* 0 while it is computed (wait: until it is); 1 with the view in *v; -1 with err set.  The
   job is done with once this returns non-zero. */
int churn_view_done(churn_follow_job *j, int wait, churn_view *v, char *err, size_t errlen);

/* v bytes in binary units: "512B", "1.5KiB", "8.1MiB". */
const char *churn_view_bytes(double v, char *buf, size_t len);

#endif
