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

#include <stdint.h>
#include <stdio.h>

#include "export/metrics.h"

/* A label every sample carries: a string (str not NULL) or a number. */
typedef struct churn_pprof_label {
    const char *key, *str;
    int64_t num;
} churn_pprof_label;

/* What a profile holds besides the window: its sample types, in order, and the default one
   (pprof's sample_index); signed: values as the metrics give them, negative ones included
   (a delta profile's live values, which fall where objects were freed), where flame graphs
   take none; and labels for every sample. */
typedef struct churn_pprof_options {
    const churn_metric *const *metrics;
    size_t nmetrics;
    const char *default_type;
    int signed_values;
    const churn_pprof_label *labels;
    size_t nlabels;
} churn_pprof_options;

/* Every metric of export/metrics.h, inuse_space by default.  Returns 0, or -1 when
   compressing or writing failed (errno set). */
int churn_export_pprof(FILE *out, const churn_export_window *w);
/* The same with o's sample types and labels. */
int churn_export_pprof_with(FILE *out, const churn_export_window *w,
                            const churn_pprof_options *o);

#endif
