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

/* How a window's passes are run, or'd together. */
enum {
    CHURN_WINDOW_ALL_EPOCHS = 1, /* every epoch, one row each (--all-epochs) */
    CHURN_WINDOW_SCRIPT_FUNCTIONS =
        2, /* functions by their script frame (--script-functions) */
};

/* Fills a (the caller frees it with churn_analysis_free); with ew, also what the exports
   need from the live set before it is freed; with freed, the --freed window; how: the
   CHURN_WINDOW_* above. */
void churn_analyze_window(churn_trace *t, churn_window window, const churn_model *model,
                          int model_from_option, churn_warnings *warnings,
                          churn_symbolizer *sym, churn_progress *progress, churn_analysis *a,
                          churn_export_window *ew, const churn_window *freed, int how);

/* The same, fitted as the reports fit by default: over the steady window (window.h) found
   from a first pass, with a second pass that fits over it when it leaves epochs out.  A
   window the options name (a bound of `window`, or CHURN_WINDOW_ALL_EPOCHS) is fitted as it
   is. */
void churn_analyze_steady(churn_trace *t, churn_window window, const churn_model *model,
                          int model_from_option, churn_warnings *warnings,
                          churn_symbolizer *sym, churn_progress *progress, churn_analysis *a,
                          churn_export_window *ew, const churn_window *freed, int how);

/* Makes a again, fitted over fit->first..last (and with ew, its export window): a run of
   --diff fitted over the window both runs share.  The warnings a's passes gave are dropped
   first. */
void churn_analyze_refit(churn_trace *t, churn_window window, const churn_steady *fit,
                         const churn_model *model, int model_from_option, churn_symbolizer *sym,
                         churn_progress *progress, churn_analysis *a, churn_export_window *ew,
                         const churn_window *freed, int how);

#endif
