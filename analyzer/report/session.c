#include "report/session.h"

#include <stdio.h>

#include "read/pipeline.h"
#include "heap/spans.h"

typedef struct run {
    churn_trace *trace;
    churn_analysis *analysis;
    churn_progress *progress;
} run;

static void segment_edge(void *ctx, size_t i, int after)
{
    run *r = ctx;
    if (after)
        churn_progress_update(r->progress, i + 1, churn_trace_segments(r->trace));
    else
        churn_analysis_segment(r->analysis, churn_trace_segment(r->trace, i));
}

static void pass(churn_trace *t, churn_window window, const churn_steady *fit,
                 const churn_model *model, int model_from_option, churn_warnings *warnings,
                 churn_symbolizer *sym, churn_progress *progress, churn_analysis *a,
                 churn_export_window *ew, const churn_window *freed, int how)
{
    churn_analysis_init(a, churn_trace_info_of(t), window,
                        churn_trace_segment(t, 0)->first_epoch, warnings, sym);
    if (fit)
        churn_analysis_fit(a, fit->first, fit->last);
    int all_epochs = (how & CHURN_WINDOW_ALL_EPOCHS) != 0;
    a->epochs.keep_all = all_epochs;
    a->functions.by_script = (how & CHURN_WINDOW_SCRIPT_FUNCTIONS) != 0;
    if (freed) {
        a->freed = *freed;
        a->has_freed = 1;
    }
    /* Span occupancy needs addresses: traces with events only. */
    int spans_on = model->kind != CHURN_MODEL_NONE &&
                   (churn_trace_info_of(t)->flags & CHURN_FILE_EVENTS);
    churn_spans spans;
    if (spans_on) {
        churn_spans_init(&spans, model);
        spans.keep_all = all_epochs;
        spans.has_first = window.has_first;
        spans.first = window.first;
    }
    churn_live_pass live;
    churn_live_pass_init(&live, window.has_last, window.last, spans_on ? &spans : NULL);
    live.peak = &a->peak;
    run r = {t, a, progress};
    churn_pipeline_run(t, warnings, churn_analysis_record, a, segment_edge, &r, &live);
    churn_analysis_finish(a, &live);
    churn_fragment_build(&a->frag, model, model_from_option, spans_on ? &spans : NULL, &live, a);
    if (spans_on)
        churn_spans_free(&spans);
    if (ew)
        churn_export_window_init(ew, a, &live);
    churn_live_pass_free(&live);
}

void churn_analyze_window(churn_trace *t, churn_window window, const churn_model *model,
                          int model_from_option, churn_warnings *warnings,
                          churn_symbolizer *sym, churn_progress *progress, churn_analysis *a,
                          churn_export_window *ew, const churn_window *freed, int how)
{
    pass(t, window, NULL, model, model_from_option, warnings, sym, progress, a, ew, freed, how);
}

void churn_analyze_refit(churn_trace *t, churn_window window, const churn_steady *fit,
                         const churn_model *model, int model_from_option, churn_symbolizer *sym,
                         churn_progress *progress, churn_analysis *a, churn_export_window *ew,
                         const churn_window *freed, int how)
{
    churn_warnings *warnings = a->warn;
    if (progress) {
        char first[sizeof progress->pass];
        snprintf(first, sizeof first, "%s", progress->pass);
        churn_progress_pass(progress, "%s again, fitting over epochs %llu..%llu", first,
                            (unsigned long long)fit->first, (unsigned long long)fit->last);
    }
    /* The pass makes every figure again: the first's warnings would be said twice. */
    churn_warnings_truncate(warnings, a->warned_before, a->uncounted_before);
    if (ew)
        churn_export_window_free(ew);
    churn_analysis_free(a);
    churn_steady steady = *fit;
    pass(t, window, &steady, model, model_from_option, warnings, sym, progress, a, ew, freed,
         how);
    steady.has_exit_epoch = a->steady.has_exit_epoch; /* this trace's own */
    steady.exit_epoch = a->steady.exit_epoch;
    a->steady = steady;
}

void churn_analyze_steady(churn_trace *t, churn_window window, const churn_model *model,
                          int model_from_option, churn_warnings *warnings,
                          churn_symbolizer *sym, churn_progress *progress, churn_analysis *a,
                          churn_export_window *ew, const churn_window *freed, int how)
{
    int named =
        window.named || window.has_first || window.has_last || (how & CHURN_WINDOW_ALL_EPOCHS);
    pass(t, window, NULL, model, model_from_option, warnings, sym, progress, a, ew, freed, how);
    if (named) {
        a->steady.how = window.named || window.has_first || window.has_last
                            ? CHURN_STEADY_EPOCHS
                            : CHURN_STEADY_ALL;
        return;
    }
    churn_steady steady = churn_steady_find(&a->epochs, a->steady.first, a->steady.last);
    steady.has_exit_epoch = a->steady.has_exit_epoch;
    steady.exit_epoch = a->steady.exit_epoch;
    if (!churn_steady_trims(&steady)) {
        a->steady = steady;
        return;
    }
    churn_analyze_refit(t, window, &steady, model, model_from_option, sym, progress, a, ew,
                        freed, how);
}
