#include "report/session.h"

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

void churn_analyze_window(churn_trace *t, churn_window window, const churn_model *model,
                          int model_from_option, churn_warnings *warnings,
                          churn_symbolizer *sym, churn_progress *progress, churn_analysis *a,
                          churn_export_window *ew, const churn_window *freed, int all_epochs)
{
    churn_analysis_init(a, churn_trace_info_of(t), window,
                        churn_trace_segment(t, 0)->first_epoch, warnings, sym);
    a->epochs.keep_all = all_epochs;
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
