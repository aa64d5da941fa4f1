#include <math.h>
#include <stdlib.h>

#include "churn/version.h"
#include "symbols/frames.h"
#include "report/report.h"
#include "analyze/trends.h"
#include "report/verdict.h"

/* The JSON report: one object on stdout, schema in docs/analyzer.md. */

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static void json_double(FILE *out, double v)
{
    fprintf(out, "%.10g", isfinite(v) ? v : 0.0);
}

static void u64(FILE *out, const char *key, unsigned long long v, int comma)
{
    fprintf(out, "\"%s\": %llu%s", key, v, comma ? ", " : "");
}

static void i64(FILE *out, const char *key, long long v, int comma)
{
    fprintf(out, "\"%s\": %lld%s", key, v, comma ? ", " : "");
}

static void metadata(FILE *out, const churn_analysis *a, const churn_report_options *o)
{
    const churn_trace_info *in = a->info;
    fputs("\"metadata\": {\"trace\": ", out);
    json_string(out, o->trace_path);
    fputs(", \"analyzer_version\": ", out);
    json_string(out, CHURN_VERSION);
    fputs(", \"libchurn_version\": ", out);
    if (in->producer[0])
        json_string(out, in->producer);
    else
        fputs("null", out);
    fputs(", ", out);
    u64(out, "pid", in->pid, 1);
    u64(out, "format_version", in->version, 1);
    fprintf(out, "\"events\": %s, \"allocator\": ", a->events ? "true" : "false");
    if (a->allocator)
        json_string(out, a->allocator);
    else
        fputs("null", out);
    fputs(", ", out);
    u64(out, "ring_bytes", in->ring_bytes, 1);
    u64(out, "file_bytes", in->file_bytes, 1);
    u64(out, "page_size", in->page_size, 1);
    u64(out, "stack_sample", a->stack_sample, 1);
    /* CHURN_SAMPLE_BYTES: which figures are exact and which estimates (docs/analyzer.md) */
    u64(out, "sample_bytes", a->sample_bytes, 1);
    fprintf(out, "\"exact\": %s, ",
            a->sample_bytes ? "[\"totals.allocs\", \"totals.frees\", \"totals.alloc_bytes\", "
                              "\"epochs.allocs\", \"epochs.frees\", \"epochs.alloc_bytes\"]"
                            : "\"all\"");
    u64(out, "start_realtime_ns", in->start_realtime_ns, 1);
    u64(out, "segments_used", a->segments_used, 1);
    u64(out, "segments_dropped", churn_report_segments_dropped(a), 1);
    u64(out, "segments_damaged", in->segments_invalid, 1);
    u64(out, "first_seq", a->first_seq, 1);
    u64(out, "last_seq", a->last_seq, 1);
    u64(out, "first_epoch", a->first_epoch, 1);
    u64(out, "last_epoch", a->last_epoch, 1);
    fputs("\"window\": {\"first\": ", out);
    if (a->window.has_first)
        fprintf(out, "%llu", (unsigned long long)a->window.first);
    else
        fputs("null", out);
    fputs(", \"last\": ", out);
    if (a->window.has_last)
        fprintf(out, "%llu", (unsigned long long)a->window.last);
    else
        fputs("null", out);
    fprintf(out, "}, \"attached\": %s", a->info->flags & CHURN_FILE_ATTACHED ? "true" : "false");
    fputs(", \"exit\": {\"how\": ", out);
    json_string(out, churn_report_exit_how(a));
    fprintf(out, ", \"detail\": %llu}, \"stop_signal\": ", (unsigned long long)a->exit_detail);
    if (a->stop_signal) /* caught, before the exit: what is live is live at end */
        fprintf(out, "%llu", (unsigned long long)a->stop_signal);
    else
        fputs("null", out);
    /* The trace ends at a checkpoint of its open segment: everything up to then is in it. */
    if (in->ends_open)
        fprintf(out, ", \"checkpoint\": {\"s\": %.6f, \"monotonic_ns\": %llu}}",
                churn_analysis_checkpoint_s(a), (unsigned long long)in->checkpoint_ns);
    else
        fputs(", \"checkpoint\": null}", out);
}

static void range(FILE *out, const char *key, int has, uint64_t first, uint64_t last)
{
    fprintf(out, ", \"%s\": ", key);
    if (has)
        fprintf(out, "[%llu, %llu]", (unsigned long long)first, (unsigned long long)last);
    else
        fputs("null", out);
}

/* The epochs slopes and rankings are fitted over (window.h). */
static void steady_window(FILE *out, const churn_analysis *a)
{
    static const char *const how[] = {"found", "--epochs", "--all-epochs"};
    const churn_steady *s = &a->steady;
    fprintf(out, "\"steady_window\": {\"how\": \"%s\", \"first\": %llu, \"last\": %llu",
            how[s->how], (unsigned long long)s->first, (unsigned long long)s->last);
    range(out, "start_up", s->has_start_up, s->start_up_first, s->start_up_last);
    range(out, "teardown", s->has_teardown, s->teardown_first, s->teardown_last);
    fputs(", \"exit_epoch\": ", out);
    if (s->has_exit_epoch)
        fprintf(out, "%llu}", (unsigned long long)s->exit_epoch);
    else
        fputs("null}", out);
}

static void totals(FILE *out, const churn_analysis *a)
{
    const churn_totals *t = &a->totals;
    fputs("\"totals\": {", out);
    u64(out, "allocs", t->allocs, 1);
    u64(out, "frees", t->frees, 1);
    u64(out, "alloc_bytes", t->alloc_bytes, 1);
    u64(out, "free_bytes", t->free_bytes, 1);
    u64(out, "unknown_frees", t->unknown_frees, 1);
    u64(out, "reallocs", t->reallocs, 1);
    if (churn_peak_known(a))
        u64(out, "temporary", t->temporary, 1);
    else
        fputs("\"temporary\": null, ", out);
    u64(out, "map_calls", t->map_calls, 1);
    u64(out, "dropped_events", t->dropped_events, 1);
    fputs("\"dropped_by_reason\": {", out);
    u64(out, "ring_full", t->dropped_ring, 1);
    u64(out, "write_error", t->dropped_write, 1);
    u64(out, "segment_too_big", t->dropped_too_big, 1);
    u64(out, "other", t->dropped_other, 0);
    fputs("}, ", out);
    u64(out, "short_stacks", t->short_stacks, 0);
    fputs("}", out);
}

static void counters(FILE *out, const churn_analysis *a, const churn_epoch_row *r)
{
    fputs("\"counters\": {", out);
    for (size_t k = 0; k < r->n_counters; k++) {
        if (k)
            fputs(", ", out);
        if (k < a->n_counter_names)
            json_string(out, a->counter_names[k]);
        else
            fprintf(out, "\"counter%zu\"", k);
        fprintf(out, ": %llu", (unsigned long long)churn_epochs_counters(&a->epochs, r)[k]);
    }
    fputs("}", out);
}

/* The table's resolution, then its rows: one per epoch, or buckets (epochs.h), whose rows
   also say which epochs they hold and their series' extremes. */
static void epochs(FILE *out, const churn_analysis *a)
{
    int buckets = !churn_epochs_exact(&a->epochs);
    fputs("\"epoch_rows\": {", out);
    u64(out, "width", 1ull << a->epochs.shift, 1);
    u64(out, "rows", a->epochs.count, 1);
    fprintf(out, "\"buckets\": %s},\n\"epochs\": [", buckets ? "true" : "false");
    for (size_t i = 0; i < a->epochs.count; i++) {
        const churn_epoch_row *r = &a->epochs.rows[i];
        fputs(i ? ",\n  {" : "\n  {", out);
        u64(out, "epoch", r->epoch, 1);
        if (buckets) {
            u64(out, "last_epoch", r->last, 1);
            u64(out, "live_epochs", r->n_live, 1);
            i64(out, "live_bytes_min", r->live_min, 1);
            i64(out, "live_bytes_max", r->live_max, 1);
            fputs("\"live_bytes_mean\": ", out);
            json_double(out, r->n_live ? r->live_sum / (double)r->n_live : 0.0);
            fputs(", ", out);
            u64(out, "summaries", r->n_summary, 1);
            u64(out, "rss_bytes_min", r->rss_min, 1);
            u64(out, "rss_bytes_max", r->rss_max, 1);
            u64(out, "wall_ns_min", r->wall_min, 1);
            u64(out, "wall_ns_max", r->wall_max, 1);
        }
        u64(out, "allocs", r->allocs, 1);
        u64(out, "frees", r->frees, 1);
        u64(out, "alloc_bytes", r->alloc_bytes, 1);
        u64(out, "free_bytes", r->free_bytes, 1);
        i64(out, "live_count", r->live_count, 1);
        i64(out, "live_bytes", r->live_bytes, 1);
        i64(out, "live_usable_bytes", r->live_usable_bytes, 1);
        u64(out, "rss_bytes", r->rss_bytes, 1);
        u64(out, "wall_ns", r->wall_ns, 1);
        u64(out, "cpu_ns", r->cpu_ns, 1);
        u64(out, "late_events", r->late_events, 1);
        u64(out, "dropped_events", r->dropped, 1);
        fprintf(out, "\"summary\": %s, ", r->has_summary ? "true" : "false");
        counters(out, a, r);
        fprintf(out, ", \"counters_stale\": %s", r->counters_stale ? "true" : "false");
        if (r->counters_stale)
            fprintf(out, ", \"counters_age_ns\": %llu", (unsigned long long)r->counters_age_ns);
        fputs("}", out);
    }
    fputs("]", out);
}

static void lifetime(FILE *out, const uint64_t *buckets)
{
    char buf[32];
    fputs("{", out);
    for (unsigned b = 0; b < CHURN_LIFETIME_BUCKETS; b++) {
        fputs(b ? ", " : "", out);
        json_string(out, churn_lifetime_label(b, buf, sizeof buf));
        fprintf(out, ": %llu", (unsigned long long)buckets[b]);
    }
    fputs("}", out);
}

static void size_classes(FILE *out, const churn_analysis *a)
{
    fputs("\"size_classes\": [", out);
    int first = 1;
    for (unsigned c = 0; c < CHURN_SIZE_CLASSES; c++) {
        const churn_class_stats *s = &a->classes[c];
        if (!s->allocs && !s->frees)
            continue;
        fputs(first ? "{" : ", {", out);
        first = 0;
        u64(out, "max_bytes", churn_size_class_max(c), 1);
        u64(out, "allocs", s->allocs, 1);
        u64(out, "frees", s->frees, 1);
        u64(out, "alloc_bytes", s->alloc_bytes, 1);
        u64(out, "free_bytes", s->free_bytes, 0);
        fputs("}", out);
    }
    fputs("]", out);
}

typedef struct frame_list {
    FILE *out;
    int first;
} frame_list;

static void frame_json(void *ctx, const char *frame)
{
    frame_list *l = ctx;
    fputs(l->first ? "" : ", ", l->out);
    l->first = 0;
    json_string(l->out, frame);
}

/* A callsite row's "stack_id" and "stack" (its frames, innermost first) fields. */
static void stack_fields(FILE *out, const churn_frames_source *src, uint64_t stack)
{
    u64(out, "stack_id", stack, 1);
    fputs("\"stack\": [", out);
    frame_list l = {out, 1};
    churn_frames_each(src, stack, 0, frame_json, &l);
    fputs("], ", out);
}

/* A growth row's fits and live value (callsites and functions alike). */
static void fit_fields(FILE *out, const churn_analysis *a, const churn_growth *g,
                       const churn_callsite *s, uint64_t alloc_bytes)
{
    fputs("\"count_per_epoch\": ", out);
    json_double(out, churn_fit_slope(&s->count_fit));
    fputs(", \"bytes_per_epoch\": ", out);
    json_double(out, churn_fit_slope(&s->bytes_fit));
    fputs(", \"r2\": ", out);
    json_double(out, churn_fit_r2(&s->bytes_fit));
    fputs(", \"count_r2\": ", out);
    json_double(out, churn_fit_r2(&s->count_fit));
    fputs(", ", out);
    i64(out, "live_count", s->live_count, 1);
    i64(out, "live_bytes", s->live_bytes, 1);    /* a sampled trace's figures are estimates: their standard errors */
    if (!a->sample_bytes) {
        fputs("\"estimate\": null, ", out);
        return;
    }
    fputs("\"estimate\": {", out);
    u64(out, "samples", s->samples, 1);
    i64(out, "live_samples", s->live_samples, 1);
    fputs("\"bytes_per_epoch_se\": ", out);
    json_double(out, churn_report_growth_se(a, g, s, alloc_bytes));
    fputs(", \"alloc_bytes_se\": ", out);
    json_double(out, churn_report_bytes_se(a, (double)alloc_bytes, (int64_t)s->samples));
    fputs(", \"live_bytes_se\": ", out);
    json_double(out, churn_report_bytes_se(a, (double)s->live_bytes, s->live_samples));
    fputs("}, ", out);
}

/* "key": "value", or "key": null. */
static void nullable_string(FILE *out, const char *key, const char *value)
{
    fprintf(out, "\"%s\": ", key);
    if (value)
        json_string(out, value);
    else
        fputs("null", out);
    fputs(", ", out);
}

/* A row's temporary allocations; null without events (peak.h). */
static void temporary_field(FILE *out, const churn_analysis *a, uint64_t n)
{
    if (churn_peak_known(a))
        u64(out, "temporary", n, 1);
    else
        fputs("\"temporary\": null, ", out);
}

static void type_field(FILE *out, const char *type)
{
    nullable_string(out, "type", type);
}

static void retention(FILE *out, const churn_analysis *a, const churn_growth *g,
                      const churn_callsite *s)
{
    churn_retained r = churn_report_retention(a, g, s);
    fprintf(out, "\"retention\": \"%s\", ", churn_retention_name(r.kind));
    i64(out, "retained_count", r.count, 1);
    i64(out, "retained_bytes", r.bytes, 1);
    if (r.reclaimed_count)
        fprintf(out, "\"reclaimed\": {\"epoch\": %llu, \"count\": %lld}, ",
                (unsigned long long)r.reclaimed_epoch, (long long)r.reclaimed_count);
    else
        fputs("\"reclaimed\": null, ", out);
}

static void growth(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    size_t n;
    churn_callsite **sites = churn_report_callsites(a, o->top, &n);
    churn_frames_source src = {&a->stacks, a->sym};
    fputs("\"growth\": [", out);
    for (size_t i = 0; i < n; i++) {
        const churn_callsite *s = sites[i];
        fputs(i ? ",\n  {" : "\n  {", out);
        stack_fields(out, &src, s->stack);
        fit_fields(out, a, &a->growth, s, s->alloc_bytes);
        u64(out, "allocs", s->allocs, 1);
        u64(out, "frees", s->frees, 1);
        u64(out, "alloc_bytes", s->alloc_bytes, 1);
        u64(out, "free_bytes", s->free_bytes, 1);
        retention(out, a, &a->growth, s);
        type_field(out, churn_report_type(a, s));
        const churn_suppression *sup = churn_suppressions_of(o->suppress, s->stack);
        nullable_string(out, "suppressed", sup ? sup->rule : NULL);
        temporary_field(out, a, s->temporary);
        fputs("\"lifetime\": ", out);
        lifetime(out, s->lifetime);
        fputs("}", out);
    }
    fputs("]", out);
    free(sites);
}

/* '"retention_classes": [{"retention": ..., "stacks": n, "retained_count": ...,
   "retained_bytes": ..., "bytes_per_epoch": ...}], ', the row's class first. */
static void retention_classes(FILE *out, const churn_function *fn)
{
    enum churn_retention order[CHURN_RETENTION_KINDS];
    size_t n = churn_functions_classes(fn, 0, order);
    fputs("\"retention_classes\": [", out);
    for (size_t i = 0; i < n; i++) {
        const struct churn_function_class *c = &fn->classes[order[i]];
        fprintf(out, "%s{\"retention\": \"%s\", ", i ? ", " : "", churn_retention_name(order[i]));
        u64(out, "stacks", c->stacks, 1);
        i64(out, "retained_count", c->count, 1);
        i64(out, "retained_bytes", c->bytes, 1);
        fputs("\"bytes_per_epoch\": ", out);
        json_double(out, c->growth);
        fputs("}", out);
    }
    fputs("], ", out);
}

/* A function's name as the reports print it; "module+0xoffset" when it has none. */
static void function_name(FILE *out, const churn_function *fn)
{
    char buf[256];
    if (fn->name) {
        json_string(out, fn->name);
        return;
    }
    snprintf(buf, sizeof buf, "%s+0x%llx", fn->module ? fn->module : "?",
             (unsigned long long)fn->offset);
    json_string(out, buf);
}

/* The start of a function row: '{"function": ..., "module": ..., ' (i: its place in the list). */
static void function_head(FILE *out, const churn_function *fn, size_t i)
{
    fputs(i ? ",\n  {\"function\": " : "\n  {\"function\": ", out);
    function_name(out, fn);
    fputs(", ", out);
    nullable_string(out, "module", fn->module);
}

static void functions(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    size_t n;
    churn_callsite **rows = churn_functions_sorted(&a->functions, o->top, &n);
    fputs("\"functions\": [", out);
    for (size_t i = 0; i < n; i++) {
        const churn_callsite *s = rows[i];
        const churn_function *fn = churn_functions_of(&a->functions, s);
        function_head(out, fn, i);
        fit_fields(out, a, &a->functions.growth, s, fn->alloc_bytes);
        u64(out, "allocs", fn->allocs, 1);
        u64(out, "frees", fn->frees, 1);
        u64(out, "alloc_bytes", fn->alloc_bytes, 1);
        u64(out, "free_bytes", fn->free_bytes, 1);
        retention(out, a, &a->functions.growth, s);
        retention_classes(out, fn);
        nullable_string(out, "via", fn->via);
        fprintf(out, "\"via_others\": %s, ", fn->via_others ? "true" : "false");
        nullable_string(out, "called_from", fn->caller);
        type_field(out, fn->type);
        temporary_field(out, a, fn->temporary);
        fputs("\"pinned_bytes\": ", out);
        json_double(out, fn->pinned_bytes);
        fputs(", ", out);
        const churn_suppression *sup = churn_suppressions_of_function(o->suppress, s->stack);
        nullable_string(out, "suppressed", sup ? sup->rule : NULL);
        u64(out, "stacks", fn->stacks, 0);
        fputs("}", out);
    }
    fputs("]", out);
    free(rows);
}

/* A slope's bound (base/fit.h), null when it has none. */
static void bound(FILE *out, double v)
{
    if (v < 0)
        fputs("null", out);
    else
        json_double(out, v);
}

static void verdict_function(FILE *out, const churn_analysis *a,
                             const churn_verdict_function *d, size_t i)
{
    function_head(out, d->fn, i);
    nullable_string(out, "called_from", d->fn->caller);
    fputs("\"called_by\": [", out);
    for (size_t k = 0; k < d->ncallers; k++) {
        fputs(k ? ", " : "", out);
        json_string(out, d->callers[k]);
    }
    fputs("], \"bytes_per_epoch\": ", out);
    json_double(out, d->bytes_per_epoch);
    fputs(", \"bytes_per_epoch_bound\": ", out);
    bound(out, d->bytes_bound);
    fputs(", \"count_per_epoch\": ", out);
    json_double(out, d->count_per_epoch);
    fputs(", \"share\": ", out);
    json_double(out, d->share);
    fputs(", ", out);
    i64(out, "live_bytes", d->row->live_bytes, 1);
    fprintf(out, "\"retention\": \"%s\", ", churn_retention_name(d->retained.kind));
    if (d->retained.reclaimed_count)
        fprintf(out, "\"reclaimed_epoch\": %llu, ",
                (unsigned long long)d->retained.reclaimed_epoch);
    else
        fputs("\"reclaimed_epoch\": null, ", out);
    type_field(out, d->fn->type);
    churn_frames_source src = {&a->stacks, a->sym};
    fputs("\"stack\": [", out);
    frame_list l = {out, 1};
    churn_frames_each(&src, d->stack, 0, frame_json, &l);
    fputs("]}", out);
}

/* The verdict's sentences and every figure they give (verdict.h). */
static void verdict(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    static const struct {
        int part;
        const char *key;
    } parts[] = {{CHURN_SPLIT_LIVE, "live"},
                 {CHURN_SPLIT_SLACK, "slack"},
                 {CHURN_SPLIT_PINNED, "pinned"},
                 {CHURN_SPLIT_FREE, "free_resident"},
                 {CHURN_SPLIT_OVERHEAD, "allocator_overhead"},
                 {CHURN_VERDICT_OWN_MMAP, "program_mmap"},
                 {CHURN_VERDICT_NOT_TRACED, "not_traced"},
                 {CHURN_SPLIT_LIBCHURN, "libchurn"},
                 {CHURN_SPLIT_OUTSIDE, "outside"},
                 {CHURN_SPLIT_MAPPED, "program_mapped"}};
    churn_verdict v;
    churn_verdict_make(a, o, &v);
    fputs("\"verdict\": {\"sentences\": [", out);
    for (size_t i = 0; i < v.nsentences; i++) {
        fputs(i ? ",\n  " : "\n  ", out);
        json_string(out, v.sentences[i]);
    }
    fprintf(out, "],\n \"window\": {\"first\": %llu, \"last\": %llu}, ",
            (unsigned long long)a->steady.first, (unsigned long long)a->steady.last);
    int slopes = v.split.epochs && !v.split.levels;
    int trend = !v.split.epochs && v.has_rss;
    double rss = slopes ? v.part[CHURN_SPLIT_RSS] : v.rss_per_epoch;
    double rss_bound = slopes ? v.bound[CHURN_SPLIT_RSS] : v.rss_bound;
    fputs("\"confidence\": 0.95, \"rss_bytes_per_epoch\": ", out);
    if (slopes || trend)
        json_double(out, rss);
    else
        fputs("null", out);
    fputs(", \"rss_bytes_per_epoch_bound\": ", out);
    bound(out, slopes || trend ? rss_bound : -1);
    fputs(", \"rss_direction\": ", out);
    if (slopes || trend) {
        int way = churn_verdict_direction(rss, rss_bound);
        fprintf(out, "\"%s\"", way < 0 ? "shrinks" : way > 0 ? "grows" : "none");
    } else
        fputs("null", out);
    fputs(", \"live_bytes_per_epoch\": ", out);
    json_double(out, v.split.levels ? 0 : slopes ? v.part[CHURN_SPLIT_LIVE] : v.live_per_epoch);
    fputs(", \"live_bytes_per_epoch_bound\": ", out);
    bound(out, v.split.levels ? 0 : slopes ? v.bound[CHURN_SPLIT_LIVE] : v.live_bound);
    fprintf(out, ", \"free_with_outside\": %s", v.split.free_with_outside ? "true" : "false");
    for (int at_end = 0; at_end < 2; at_end++) {
        fputs(at_end ? ",\n \"at_end\": " : ",\n \"parts\": ", out);
        if (!v.split.epochs || v.split.levels != at_end) {
            fputs("null", out);
            continue;
        }
        fputs("{", out);
        if (at_end)
            fprintf(out, "\"epoch\": %llu, \"rss_bytes\": %.0f, ",
                    (unsigned long long)v.split.last, v.part[CHURN_SPLIT_RSS]);
        for (size_t k = 0; k < sizeof parts / sizeof *parts; k++) {
            fprintf(out, "%s\"%s%s\": ", k ? ", " : "", parts[k].key, at_end ? "_bytes" : "");
            if (parts[k].part == CHURN_SPLIT_FREE && v.split.free_with_outside)
                fputs("null", out);
            else
                json_double(out, v.part[parts[k].part]);
        }
        fputs("}", out);
    }
    fputs(",\n \"bounds\": ", out);
    if (slopes) {
        for (size_t k = 0; k < sizeof parts / sizeof *parts; k++) {
            fprintf(out, "%s\"%s\": ", k ? ", " : "{", parts[k].key);
            bound(out, parts[k].part == CHURN_SPLIT_FREE && v.split.free_with_outside
                           ? -1
                           : v.bound[parts[k].part]);
        }
        fputs("}", out);
    } else
        fputs("null", out);
    fputs(",\n \"functions\": [", out);
    for (size_t i = 0; i < v.nfunctions; i++)
        verdict_function(out, a, &v.functions[i], i);
    fputs("],\n \"mappings\": [", out);
    if (v.has_mapping) {
        verdict_function(out, a, &v.mapping, 0);
    }
    fputs("]}", out);
    churn_verdict_free(&v);
}

static void window_bound(FILE *out, const char *key, int has, uint64_t v, int comma)
{
    if (has)
        u64(out, key, v, comma);
    else
        fprintf(out, "\"%s\": null%s", key, comma ? ", " : "");
}

static void freed_fields(FILE *out, const churn_callsite *s)
{
    u64(out, "count", s->freed_count, 1);
    u64(out, "bytes", s->freed_bytes, 1);
    u64(out, "older_count", s->freed_old_count, 1);
    u64(out, "older_bytes", s->freed_old_bytes, 1);
    u64(out, "allocated_from", s->freed_from, 1);
    u64(out, "allocated_to", s->freed_to, 0);
}

/* --freed: what the window released; null without the option. */
static void freed(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    if (!a->has_freed) {
        fputs("\"freed\": null", out);
        return;
    }
    fputs("\"freed\": {", out);
    window_bound(out, "first", a->freed.has_first, a->freed.first, 1);
    window_bound(out, "last", a->freed.has_last, a->freed.last, 1);
    size_t n;
    churn_callsite **rows = churn_growth_sorted_by_freed(&a->functions.growth, o->top, &n);
    fputs("\"functions\": [", out);
    for (size_t i = 0; i < n; i++) {
        const churn_function *fn = churn_functions_of(&a->functions, rows[i]);
        function_head(out, fn, i);
        freed_fields(out, rows[i]);
        fputs("}", out);
    }
    free(rows);
    rows = churn_growth_sorted_by_freed(&a->growth, o->top, &n);
    churn_frames_source src = {&a->stacks, a->sym};
    fputs("],\n\"callsites\": [", out);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",\n  {" : "\n  {", out);
        stack_fields(out, &src, rows[i]->stack);
        freed_fields(out, rows[i]);
        fputs("}", out);
    }
    free(rows);
    fputs("]}", out);
}

/* The rules that matched, with what they hold at the end. */
static void suppressed(FILE *out, const churn_report_options *o)
{
    fputs("\"suppressed\": [", out);
    int n = 0;
    for (size_t i = 0; o->suppress && i < o->suppress->count; i++) {
        const churn_suppression *r = &o->suppress->rules[i];
        if (!r->callsites)
            continue;
        fputs(n++ ? ",\n  {\"rule\": " : "\n  {\"rule\": ", out);
        json_string(out, r->rule);
        fputs(", \"what\": ", out);
        json_string(out, r->what);
        fputs(", ", out);
        u64(out, "callsites", r->callsites, 1);
        i64(out, "live_count", r->live_count, 1);
        i64(out, "live_bytes", r->live_bytes, 0);
        fputs("}", out);
    }
    fputs("]", out);
}

#define PEAK_SITES 20 /* callsites listed at the peak */

/* null without events: the epoch sums cannot say what was live between epoch ends. */
static void peak(FILE *out, churn_analysis *a)
{
    const churn_peak *p = &a->peak;
    fputs("\"peak\": ", out);
    if (!churn_peak_known(a)) {
        fputs("null", out);
        return;
    }
    fputs("{", out);
    i64(out, "bytes", p->peak_bytes, 1);
    i64(out, "count", p->peak_count, 1);
    int64_t lower, upper;
    churn_peak_bounds(&a->peak, &lower, &upper);
    fprintf(out, "\"exact\": %s, ", lower == upper ? "true" : "false");
    i64(out, "lower", lower, 1);
    i64(out, "upper", upper, 1);
    u64(out, "epoch", p->has_peak ? p->peak_epoch : a->first_epoch, 1);
    fputs("\"callsites\": [", out);
    size_t n;
    churn_peak_row *rows = churn_peak_rows(a, PEAK_SITES, &n);
    churn_frames_source src = {&a->stacks, a->sym};
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",\n  {" : "\n  {", out);
        stack_fields(out, &src, rows[i].stack);
        i64(out, "live_count", rows[i].count, 1);
        i64(out, "live_bytes", rows[i].bytes, 0);
        fputs("}", out);
    }
    free(rows);
    fputs("]}", out);
}

static void opt_i64(FILE *out, const char *key, int known, long long v)
{
    if (known)
        i64(out, key, v, 1);
    else
        fprintf(out, "\"%s\": null, ", key);
}

/* A row per epoch of the window; when the epochs table is in buckets, the first and the last
   epoch's and each bucket's last epoch's, whose RSS and books the table keeps. */
static void fragmentation_rows(FILE *out, const churn_analysis *a)
{
    const churn_fragmentation *f = &a->frag;
    fputs("\"fragmentation\": [", out);
    for (size_t i = 0, shown = 0; i < f->nrows; i++) {
        if (!churn_epochs_exact(&a->epochs) && i && i + 1 < f->nrows) {
            const churn_epoch_row *b = churn_epochs_containing(&a->epochs, f->snaps[i].epoch);
            if (b && b->last != f->snaps[i].epoch)
                continue;
        }
        churn_frag_row row;
        churn_frag_row_at(f, i, &row);
        const churn_frag_row *r = &row;
        fputs(shown++ ? ",\n  {" : "\n  {", out);
        u64(out, "epoch", r->epoch, 1);
        u64(out, "live_count", r->live_count, 1);
        u64(out, "live_bytes", r->live_bytes, 1);
        u64(out, "unplaced_count", r->unplaced_count, 1);
        u64(out, "unplaced_bytes", r->unplaced_bytes, 1);
        u64(out, "slack_bytes", r->slack_bytes, 1);
        i64(out, "pinned_bytes", r->pinned_bytes, 1);
        u64(out, "span_bytes", r->span_bytes, 1);
        u64(out, "spans", r->spans, 1);
        opt_i64(out, "free_resident_bytes", r->has_books, (long long)r->free_resident_bytes);
        opt_i64(out, "heap_bytes", r->row != NULL, (long long)r->heap_bytes);
        opt_i64(out, "outside_heap_bytes", r->has_rss && !r->rss_stale && !r->not_resident,
                r->outside_heap_bytes);
        fprintf(out, "\"outside_with_free\": %s, ",
                churn_frag_outside_with_free(r, f->books != CHURN_BOOKS_NONE) ? "true" : "false");
        opt_i64(out, "rss_bytes", r->has_rss, (long long)r->rss_bytes);
        opt_i64(out, "program_mapped_bytes", r->row != NULL, (long long)r->mapped_bytes);
        opt_i64(out, "residual_bytes", r->row != NULL, r->residual_bytes);
        fprintf(out, "\"books_stale\": %s, ", r->books_stale ? "true" : "false");
        fprintf(out, "\"rss_stale\": %s, ", r->rss_stale ? "true" : "false");
        fprintf(out, "\"heap_not_resident\": %s, ", r->not_resident ? "true" : "false");
        opt_i64(out, "untraced_bytes", r->has_untraced, (long long)r->untraced_bytes);
        opt_i64(out, "libchurn_bytes", r->has_own, (long long)r->own_bytes);
        if (r->row)
            counters(out, a, r->row);
        else
            fputs("\"counters\": {}", out);
        fputs("}", out);
    }
    fputs("]", out);
}

static void frag_part(FILE *out, const churn_frag_part *p);

/* The callsites whose survivors pin the most span bytes, as a JSON array. */
static void pin_sites(FILE *out, churn_analysis *a, const churn_report_options *o,
                      const churn_frag_part *sites, size_t nsites)
{
    churn_frames_source src = {&a->stacks, a->sym};
    size_t n = o->top && o->top < nsites ? o->top : nsites;
    fputs("[", out);
    for (size_t i = 0; i < n; i++) {
        const churn_frag_part *p = &sites[i];
        fputs(i ? ",\n  {" : "\n  {", out);
        stack_fields(out, &src, p->key);
        frag_part(out, p);
        fputs("}", out);
    }
    fputs("]", out);
}

/* {"epoch", "callsites"} of a pinning ranking taken at an epoch, or null. */
static void pin_at(FILE *out, churn_analysis *a, const churn_report_options *o, int has,
                   uint64_t epoch, const churn_frag_part *sites, size_t nsites)
{
    if (!has) {
        fputs("null", out);
        return;
    }
    fputs("{", out);
    u64(out, "epoch", epoch, 1);
    fputs("\"callsites\": ", out);
    pin_sites(out, a, o, sites, nsites);
    fputs("}", out);
}

static void frag_part(FILE *out, const churn_frag_part *p)
{
    u64(out, "live_count", p->count, 1);
    u64(out, "live_bytes", p->live_bytes, 1);
    u64(out, "usable_bytes", p->usable_bytes, 1);
    fputs("\"span_bytes\": ", out);
    json_double(out, p->span_share);
    fputs(", \"pinned_bytes\": ", out);
    json_double(out, churn_frag_pinned(p));
    fputs(", \"pinned_per_live_byte\": ", out);
    json_double(out, p->live_bytes ? churn_frag_pinned(p) / (double)p->live_bytes : 0.0);
}

static void fragmentation(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    const churn_fragmentation *f = &a->frag;
    static const char *const books[] = {NULL, "glibc", "gperftools", "tcmalloc", "jemalloc"};
    fputs("\"fragmentation_model\": {\"model\": ", out);
    json_string(out, churn_model_name(&f->model));
    fprintf(out, ", \"source\": \"%s\", \"page_bytes\": %llu, \"books\": ",
            f->from_option ? "option" : "trace", (unsigned long long)f->model.page);
    if (books[f->books])
        json_string(out, books[f->books]);
    else
        fputs("null", out);
    fputs(", \"recorded_classes\": [", out);
    for (size_t i = 0; i < f->model.nclasses; i++)
        fprintf(out, "%s[%llu, %llu]", i ? ", " : "",
                (unsigned long long)f->model.class_size[i],
                (unsigned long long)f->model.class_span[i]);
    fputs("]},\n", out);
    fragmentation_rows(out, a);
    fputs(",\n\"fragmentation_callsites\": ", out);
    pin_sites(out, a, o, f->sites, f->nsites);
    fputs(",\n\"pinning\": {\"before_teardown\": ", out);
    pin_at(out, a, o, f->has_before, f->before_epoch, f->before_sites, f->nbefore);
    fputs(",\n\"peak\": ", out);
    pin_at(out, a, o, f->has_peak, f->peak_epoch, f->peak_sites, f->npeak);
    fputs("},\n\"fragmentation_size_classes\": [", out);
    for (size_t i = 0; i < f->nclasses; i++) {
        const churn_frag_part *p = &f->classes[i];
        fputs(i ? ",\n  {" : "\n  {", out);
        u64(out, "usable_size", p->key, 1);
        frag_part(out, p);
        fputs("}", out);
    }
    fputs("]", out);
}

static void trends(FILE *out, const churn_analysis *a)
{
    churn_trends t =
        churn_trends_compute(&a->epochs, a->growth.window_first, a->growth.window_last);
    const struct {
        const char *key;
        double v;
    } f[] = {
        {"live_bytes_per_epoch", t.live_bytes_per_epoch}, {"live_bytes_r2", t.live_bytes_r2},
        {"rss_bytes_per_epoch", t.rss_bytes_per_epoch},   {"rss_bytes_r2", t.rss_bytes_r2},
        {"wall_ns_per_epoch", t.wall_ns_per_epoch},       {"wall_ns_r2", t.wall_ns_r2},
        {"duration_vs_live_correlation", t.duration_vs_live_correlation},
        {"duration_vs_live_rank_correlation", t.duration_vs_live_rank_correlation},
        {"duration_vs_live_rank_rows", (double)t.rank_rows},
    };
    fputs("\"trends\": {", out);
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        fprintf(out, "%s\"%s\": ", i ? ", " : "", f[i].key);
        json_double(out, f[i].v);
    }
    fputs("}", out);
}

/* '"debug_info": [...], ': each module the report resolved ips in, where its names came
   from, and the Debian package of one without debug info. */
static void debug_info(FILE *out, churn_analysis *a)
{
    static const char *const from[] = {NULL, "file", "debuginfod", "symbol cache"};
    size_t n;
    churn_report_debug *d = churn_report_debug_info(a, &n);
    const char *urls = getenv("DEBUGINFOD_URLS");
    fputs("\"debug_info\": [", out);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",\n  {\"module\": " : "\n  {\"module\": ", out);
        json_string(out, d[i].m.path);
        fputs(", \"from\": ", out);
        if (d[i].m.from == CHURN_DEBUG_FROM_DEBUGINFOD) {
            char f[4096];
            snprintf(f, sizeof f, "debuginfod %s", urls ? urls : "");
            json_string(out, f);
        } else if (from[d[i].m.from]) {
            json_string(out, from[d[i].m.from]);
        } else {
            fputs("null", out);
        }
        fputs(", ", out);
        nullable_string(out, "debug_file", d[i].m.debug_file);
        nullable_string(out, "package", d[i].package);
        char dbgsym[256];
        snprintf(dbgsym, sizeof dbgsym, "%s-dbgsym", d[i].package ? d[i].package : "");
        fputs("\"dbgsym\": ", out);
        if (d[i].package)
            json_string(out, dbgsym);
        else
            fputs("null", out);
        fputs("}", out);
    }
    fputs("],\n", out);
    free(d);
}

static void warnings(FILE *out, const churn_warnings *w)
{
    fputs("\"warnings\": [", out);
    for (size_t i = 0; i < w->count; i++) {
        fputs(i ? ",\n  " : "\n  ", out);
        json_string(out, w->lines[i]);
    }
    if (w->suppressed)
        fprintf(out, "%s\"%zu more warning(s) not shown\"", w->count ? ",\n  " : "\n  ",
                w->suppressed);
    fputs("]", out);
}

void churn_report_json(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    churn_report_types(a);
    fputs("{", out);
    metadata(out, a, o);
    fputs(",\n", out);
    steady_window(out, a);
    fputs(",\n", out);
    verdict(out, a, o);
    fputs(",\n", out);
    totals(out, a);
    fputs(",\n", out);
    epochs(out, a);
    fputs(",\n\"leaked_at_exit\": {", out);
    u64(out, "count", a->leaked_count, 1);
    u64(out, "bytes", a->leaked_bytes, 0);
    fputs("},\n", out);
    peak(out, a);
    fputs(",\n\"lifetime\": ", out);
    lifetime(out, a->lifetime);
    fputs(",\n", out);
    size_classes(out, a);
    fputs(",\n", out);
    functions(out, a, o);
    fputs(",\n", out);
    growth(out, a, o);
    fputs(",\n", out);
    freed(out, a, o);
    fputs(",\n", out);
    suppressed(out, o);
    fputs(",\n", out);
    fragmentation(out, a, o);
    fputs(",\n", out);
    trends(out, a);
    fputs(",\n", out);
    debug_info(out, a);
    churn_report_collect_warnings(a);
    warnings(out, a->warn);
    fputs("}\n", out);
}

void churn_report_json_string(FILE *out, const char *s)
{
    json_string(out, s);
}
