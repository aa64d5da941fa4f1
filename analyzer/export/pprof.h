/*
 * --pprof: the analyzed window as a pprof profile (profile.proto, gzip-compressed), one
 * sample per callsite with a value for every metric of export/metrics.h (alloc_space,
 * alloc_objects, inuse_space, inuse_objects, growth_space, leaked_space), locations already
 * symbolized with inlined frames, so `pprof` needs neither the binaries nor their symbols.
 *
 * The few messages are encoded by hand (export/protobuf.h) rather than generated with
 * protobuf-c: see docs/flamegraphs.md.
 */
#ifndef CHURN_EXPORT_PPROF_H
#define CHURN_EXPORT_PPROF_H

#include <stdio.h>

#include "export/metrics.h"

/* Returns 0, or -1 when compressing or writing failed (errno set). */
int churn_export_pprof(FILE *out, const churn_export_window *w);

#endif
