/*
 * What a flame graph or profile measures per callsite: one row of a table per metric, shared
 * by every export (folded stacks, SVG, HTML, pprof).  A metric reads one analyzed window; a
 * value that belongs to no callsite (objects carried in from overwritten segments) is its
 * "rest" and shows as one frame of its own, so that every metric sums to the report's total.
 */
#ifndef CHURN_EXPORT_METRICS_H
#define CHURN_EXPORT_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/analysis.h"
#include "base/progress.h"
#include "export/tree.h"

/* One analyzed window with what the exports need beyond churn_analysis: per callsite, the
   bytes and objects allocated inside the window and live at its end (from the live set,
   which is gone once the analysis is finished). */
typedef struct churn_export_window {
    churn_analysis *a;
    int64_t *leaked_bytes, *leaked_count; /* indexed like a->growth.sites */
    int64_t *pinned_bytes;                /* span bytes survivors pin (a->frag), likewise */
    int64_t *peak_bytes;                  /* live at the peak (a->peak), likewise */
    int64_t rest_leaked_bytes;            /* carried-in objects still live (no callsite) */
} churn_export_window;

/* Call after churn_analysis_finish, before the live pass is freed. */
void churn_export_window_init(churn_export_window *w, churn_analysis *a,
                              const churn_live_pass *p);
void churn_export_window_free(churn_export_window *w);

typedef struct churn_metric {
    const char *name;        /* on the command line: --folded=NAME */
    const char *title;       /* for people */
    const char *unit;        /* "bytes" or "objects" */
    const char *pprof_type;  /* the pprof sample type (alloc_space, inuse_space, ...) */
    int64_t (*site)(const churn_export_window *w, size_t site_index);
    int64_t (*rest)(const churn_export_window *w);   /* NULL: everything has a callsite */
} churn_metric;

extern const churn_metric churn_metrics[];
extern const size_t churn_metrics_count;

/* The metric called name, or NULL. */
const churn_metric *churn_metric_find(const char *name);

/* The value of a callsite (by index into a->growth.sites) or of the rest; never negative,
   as a flame graph has no negative widths. */
int64_t churn_metric_site(const churn_metric *m, const churn_export_window *w, size_t site);
int64_t churn_metric_rest(const churn_metric *m, const churn_export_window *w);

/* The frame that the rest is drawn as. */
#define CHURN_REST_FRAME "<carried in from overwritten segments>"

/* Adds the metric's value of every callsite of the window (and the rest) to column col,
   symbolizing their stacks (progress may be NULL). */
void churn_metric_fill(const churn_metric *m, const churn_export_window *w, churn_tree *t,
                       unsigned col, churn_progress *progress);

#endif
