/*
 * A followed process's heap as Go's net/http/pprof serves one (/debug/pprof/heap and
 * /debug/pprof/allocs): a gzipped pprof profile whose sample types are Go's, in Go's order
 * (alloc_objects/count, alloc_space/bytes, inuse_objects/count, inuse_space/bytes), one
 * sample per callsite, labelled with the pid and the executable, so that Parca, Pyroscope
 * and `go tool pprof` read it as they read a Go program's.  The figures are the callsites'
 * as the analysis keeps them while it reads (weighted where the trace is sampled, as
 * --pprof's), taken on the follower's thread: no finishing is needed.
 *
 * A delta profile (`?seconds=N`) is Go's: what the callsites did between a baseline and now,
 * the live values as changes (negative where objects were freed).
 */
#ifndef CHURN_LIVE_PROFILE_H
#define CHURN_LIVE_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "live/follow.h"

/* The callsites' figures at a moment, by stack id. */
typedef struct churn_profile_base {
    struct churn_profile_site {
        uint64_t stack;
        int64_t allocs, alloc_bytes, live_count, live_bytes;
    } * sites;
    size_t n;
    uint64_t restarts; /* the follower's, then: a restart in between voids the delta */
} churn_profile_base;

/* Takes the baseline of a delta profile.  Returns 0, or -1 when nothing was read yet. */
int churn_profile_base_take(churn_follow *f, churn_profile_base *b);
void churn_profile_base_free(churn_profile_base *b);

/* Writes the profile: allocs picks alloc_space as the default sample type (Go's
   /debug/pprof/allocs), else inuse_space; base (or NULL) makes it a delta since the base.
   Returns 0, or -1 with err set. */
int churn_profile_write(churn_follow *f, int allocs, const churn_profile_base *base, FILE *out,
                        char *err, size_t errlen);

#endif
