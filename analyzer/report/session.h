/*
 * One pass of a trace through the analysis for one epoch window: the pipeline, the live set,
 * the fragmentation estimate, and what the exports need from the live set.  churn-analyze
 * runs it for each report; `--tree` and `churn run` for each process image of a tree.
 */
#ifndef CHURN_SESSION_H
#define CHURN_SESSION_H

#include "analyze/analysis.h"
#include "export/metrics.h"
#include "heap/model.h"
#include "base/progress.h"

/* Fills a (the caller frees it with churn_analysis_free); with ew, also what the exports
   need from the live set before it is freed; with freed, the --freed window; all_epochs
   keeps one row per epoch in the epochs table (--all-epochs). */
void churn_analyze_window(churn_trace *t, churn_window window, const churn_model *model,
                          int model_from_option, churn_warnings *warnings,
                          churn_symbolizer *sym, churn_progress *progress, churn_analysis *a,
                          churn_export_window *ew, const churn_window *freed, int all_epochs);

#endif
