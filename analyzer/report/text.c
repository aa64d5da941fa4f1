#include <math.h>
#include <stdlib.h>

#include "churn/version.h"
#include "symbols/frames.h"
#include "report/report.h"
#include "analyze/trends.h"
#include "base/util.h"
#include "report/verdict.h"

/* The text report: what grew, in a form that fits a terminal. */

#define EPOCH_ROWS_FEW 3 /* up to this many rows, every one is shown */
#define SPARK_WIDTH 60   /* characters of a sparkline at most */
#define TEXT_FRAMES 6

static const char *human(double v, char *buf, size_t len)
{
    return churn_report_binary(v, "", buf, len);
}

/* An objects-per-epoch slope: three significant digits below 1000, whole numbers above, so that
   2000 objects an epoch reads 2000, not %g's 2e+03. */
static const char *count_rate(double v, char *buf, size_t len)
{
    snprintf(buf, len, v > -1000 && v < 1000 ? "%+.3g" : "%+.0f", v);
    return buf;
}

static void header(FILE *out, const churn_analysis *a, const churn_report_options *o)
{
    char how[64];
    fprintf(out, "churn-analyze %s: %s", CHURN_VERSION, o->trace_path);
    if (a->info->producer[0])
        fprintf(out, ", written by libchurn %s", a->info->producer);
    fputc('\n', out);
    fprintf(out, "  pid %llu, %s, allocator %s, %zu segment(s) used, %llu overwritten by the "
                 "ring, epochs %llu-%llu, %s\n",
            (unsigned long long)a->info->pid, a->events ? "events" : "epoch summaries only",
            a->allocator ? a->allocator : "?", a->segments_used,
            churn_report_segments_dropped(a), (unsigned long long)a->first_epoch,
            (unsigned long long)a->last_epoch, churn_report_exit_text(a, how, sizeof how));
    /* Said at the top as well as among the warnings: every figure below is short by them. */
    if (a->totals.dropped_events)
        fprintf(out, "  WARNING: %llu event(s) dropped by the shim: figures are incomplete "
                     "(the warnings at the end say why)\n",
                (unsigned long long)a->totals.dropped_events);
    char untraced[512];
    if (churn_report_untraced(a, untraced, sizeof untraced))
        fprintf(out, "  WARNING: %s\n", untraced);
    fputs("  sizes in binary units: KiB = 1024 bytes, MiB = 1024 KiB\n", out);
    if (a->stack_sample > 1)
        fprintf(out, "  stacks sampled: one allocation in %llu (CHURN_STACK_SAMPLE); callsite "
                     "figures are estimates, %llu x what the sampled allocations did\n",
                (unsigned long long)a->stack_sample, (unsigned long long)a->stack_sample);
    if (a->sample_bytes)
        fprintf(out, "  allocations sampled: one sample per %llu bytes allocated on average "
                     "(CHURN_SAMPLE_BYTES), each sampled object weighted by 1/p, p = 1 - "
                     "exp(-size/%llu); the counts of allocations and frees and the bytes "
                     "allocated are exact, every other figure (bytes freed, live, epochs' live "
                     "values, size classes, lifetimes, callsites, functions, types) is an "
                     "estimate, given with its standard error (+-) where it is ranked; the "
                     "peak, temporary allocations and fragmentation are not known "
                     "(docs/analyzer.md)\n",
                (unsigned long long)a->sample_bytes, (unsigned long long)a->sample_bytes);
    if (a->window.has_first || a->window.has_last) {
        uint64_t first = a->window.has_first ? a->window.first : a->first_epoch;
        uint64_t last = a->window.has_last ? a->window.last : a->last_epoch;
        fprintf(out, "  window: epochs %llu..%llu", (unsigned long long)first,
                (unsigned long long)last);
        if (first > a->last_epoch || last < a->first_epoch)
            fprintf(out, " (none of them in the trace, whose epochs are %llu-%llu)",
                    (unsigned long long)a->first_epoch, (unsigned long long)a->last_epoch);
        fputc('\n', out);
    }
}

static void verdict(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    churn_verdict v;
    churn_verdict_make(a, o, &v);
    fputs("\nVerdict:\n", out);
    for (size_t i = 0; i < v.nsentences; i++)
        fprintf(out, "  %s\n", v.sentences[i]);
    churn_verdict_free(&v);
}

static void totals(FILE *out, churn_analysis *a)
{
    char b1[32], b2[32], b3[32];
    const churn_totals *t = &a->totals;
    if (a->sample_bytes) {
        fprintf(out, "\nTotals (exact): %llu allocs (%sB), %llu frees; estimates: %sB freed, "
                     "%llu reallocs\n",
                (unsigned long long)t->allocs, human((double)t->alloc_bytes, b1, sizeof b1),
                (unsigned long long)t->frees, human((double)t->free_bytes, b2, sizeof b2),
                (unsigned long long)t->reallocs);
        fprintf(out, "Live at end (estimate): %llu objects (%sB)\n",
                (unsigned long long)a->leaked_count, human((double)a->leaked_bytes, b3, sizeof b3));
        fputs("Peak and temporary allocations: not known (a sampled trace has the events of "
              "the sampled allocations only)\n", out);
        return;
    }
    /* After an attach, a free of an object the trace never saw allocated is expected: the
       object was live before the attach. */
    fprintf(out, "\nTotals: %llu allocs (%sB), %llu frees (%sB), %llu %s, %llu reallocs\n",
            (unsigned long long)t->allocs, human((double)t->alloc_bytes, b1, sizeof b1),
            (unsigned long long)t->frees, human((double)t->free_bytes, b2, sizeof b2),
            (unsigned long long)t->unknown_frees,
            a->info->flags & CHURN_FILE_ATTACHED ? "frees of objects allocated before the attach"
                                                 : "unknown frees",
            (unsigned long long)t->reallocs);
    /* A window that begins at A counts what it allocated (docs/analyzer.md, Window): the
       rows below count every live object, so the label says which this is. */
    fprintf(out, "%s: %llu objects (%sB)\n",
            a->window.has_first  ? "Live at the window's end, of what the window allocated"
            : a->window.has_last ? "Live at the window's end"
                                 : "Live at end",
            (unsigned long long)a->leaked_count, human((double)a->leaked_bytes, b3, sizeof b3));
    if (!churn_peak_known(a)) {
        fputs("Peak and temporary allocations: not known (CHURN_EVENTS=0 keeps epoch sums only, "
              "not what happened between epoch ends)\n", out);
        return;
    }
    if (a->peak.has_peak)
        fprintf(out, "Peak: %sB requested live in %lld objects, in epoch %llu\n",
                human((double)a->peak.peak_bytes, b3, sizeof b3), (long long)a->peak.peak_count,
                (unsigned long long)a->peak.peak_epoch);
    else
        fprintf(out, "Peak: none, no allocation or free in the %s\n",
                a->window.has_first || a->window.has_last ? "window" : "trace");
    int64_t lower, upper;
    churn_peak_bounds(&a->peak, &lower, &upper);
    if (lower != upper) {
        char b4[32], b5[32];
        fprintf(out, "  an estimate: threads interleave within epochs, and the trace orders one "
                     "thread's events of an epoch together; the process's peak lies between "
                     "%sB and %sB\n", human((double)lower, b4, sizeof b4),
                human((double)upper, b5, sizeof b5));
    }
    fprintf(out, "Temporary allocations (freed before any other heap event): %llu (%.1f%% of "
                 "allocs)\n",
            (unsigned long long)t->temporary,
            t->allocs ? 100.0 * (double)t->temporary / (double)t->allocs : 0.0);
}

static void frame_text(void *ctx, const char *frame);

static void peak_callsites(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    if (!churn_peak_known(a))
        return;
    size_t n;
    churn_peak_row *rows = churn_peak_rows(a, o->top, &n);
    churn_frames_source src = {&a->stacks, a->sym};
    fputs("\nLive at the peak, by callsite:\n", out);
    if (!n)
        fputs("  (none)\n", out);
    for (size_t i = 0; i < n; i++) {
        char b[32];
        fprintf(out, "  #%zu %sB in %lld objects\n", i + 1,
                human((double)rows[i].bytes, b, sizeof b), (long long)rows[i].count);
        size_t total = churn_frames_each(&src, rows[i].stack, TEXT_FRAMES, frame_text, out);
        if (total > TEXT_FRAMES)
            fprintf(out, "        ... %zu more frame(s)\n", total - TEXT_FRAMES);
    }
    free(rows);
}

static int by_temporary(const void *x, const void *y)
{
    const churn_callsite *a = *(churn_callsite *const *)x, *b = *(churn_callsite *const *)y;
    if (a->temporary != b->temporary)
        return a->temporary < b->temporary ? 1 : -1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static void temporary_callsites(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    if (!churn_peak_known(a))
        return;
    size_t n = 0;
    churn_callsite **v = churn_xcalloc(a->growth.count ? a->growth.count : 1, sizeof *v);
    for (size_t i = 0; i < a->growth.count; i++)
        if (a->growth.sites[i].temporary)
            v[n++] = &a->growth.sites[i];
    qsort(v, n, sizeof *v, by_temporary);
    if (o->top && n > o->top)
        n = o->top;
    churn_frames_source src = {&a->stacks, a->sym};
    fputs("\nTop callsites by temporary allocations:\n", out);
    if (!n)
        fputs("  (none)\n", out);
    for (size_t i = 0; i < n; i++) {
        const churn_callsite *s = v[i];
        fprintf(out, "  #%zu %llu temporary of %llu allocs (%.1f%%)\n", i + 1,
                (unsigned long long)s->temporary, (unsigned long long)s->allocs,
                s->allocs ? 100.0 * (double)s->temporary / (double)s->allocs : 0.0);
        size_t total = churn_frames_each(&src, s->stack, TEXT_FRAMES, frame_text, out);
        if (total > TEXT_FRAMES)
            fprintf(out, "        ... %zu more frame(s)\n", total - TEXT_FRAMES);
    }
    free(v);
}

static void epoch_row(FILE *out, const char *label, const churn_epoch_row *r)
{
    /* An epoch without its summary (the last one of a trace that ends at a checkpoint) has no
       RSS reading and no length: "-", not a 0 that reads as measured. */
    char b[5][32];
    if (r->has_summary)
        snprintf(b[4], sizeof b[4], "%.3f", (double)r->wall_ns / 1e6);
    fprintf(out, "  %-8s %8llu %9llu %9llu %9s %9s %10lld %9s %9s %10s\n", label,
            (unsigned long long)r->epoch, (unsigned long long)r->allocs,
            (unsigned long long)r->frees, human((double)r->alloc_bytes, b[0], 32),
            human((double)r->free_bytes, b[1], 32), (long long)r->live_count,
            human((double)r->live_bytes, b[2], 32),
            r->has_summary ? human((double)r->rss_bytes, b[3], 32) : "-",
            r->has_summary ? b[4] : "-");
}

/* A line of block characters, one for each group of rows, the height of the group's most. */
static void sparkline(FILE *out, const churn_epochs *e, const char *label,
                      double (*most)(const churn_epoch_row *r),
                      int (*has)(const churn_epoch_row *r))
{
    static const char *const blocks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                         "\u2585", "\u2586", "\u2587", "\u2588"};
    size_t width = e->count < SPARK_WIDTH ? e->count : SPARK_WIDTH;
    double v[SPARK_WIDTH], lo = 0, hi = 0;
    int seen[SPARK_WIDTH] = {0}, any = 0;
    for (size_t i = 0; i < e->count; i++) {
        size_t k = i * width / e->count;
        if (!has(&e->rows[i]))
            continue;
        double x = most(&e->rows[i]);
        v[k] = seen[k] && v[k] > x ? v[k] : x;
        seen[k] = 1;
        lo = any && lo < x ? lo : x;
        hi = any && hi > x ? hi : x;
        any = 1;
    }
    if (!any)
        return;
    char b1[32], b2[32];
    fprintf(out, "  %-17s ", label);
    for (size_t k = 0; k < width; k++)
        fputs(!seen[k] ? " " : blocks[hi > lo ? (int)((v[k] - lo) / (hi - lo) * 7.999) : 0],
              out);
    fprintf(out, "  %s .. %s\n", human(lo, b1, sizeof b1), human(hi, b2, sizeof b2));
}

static double row_live_max(const churn_epoch_row *r)
{
    return (double)r->live_max;
}

static int row_has_live(const churn_epoch_row *r)
{
    return r->has_live;
}

static double row_rss_max(const churn_epoch_row *r)
{
    return (double)r->rss_max;
}

static int row_has_rss(const churn_epoch_row *r)
{
    return r->has_summary && r->rss_max;
}

/* Every row with --all-epochs (or when there are only a few); else the telling ones, the
   start, the one of the most live bytes and the end, and the live bytes and RSS of every row
   drawn as sparklines. */
static void epochs(FILE *out, const churn_analysis *a)
{
    const churn_epochs *e = &a->epochs;
    if (!e->count)
        return;
    int every = e->keep_all || e->count <= EPOCH_ROWS_FEW;
    size_t peak = 0;
    for (size_t i = 1; i < e->count; i++)
        if (e->rows[i].live_max > e->rows[peak].live_max)
            peak = i;
    if (churn_epochs_exact(e))
        fprintf(out, "\nEpochs (%zu%s):\n", e->count,
                every ? ""
                      : "; the start, the most live bytes and the end, --all-epochs for "
                        "every row");
    else
        fprintf(out, "\nEpochs %llu..%llu in %zu buckets of %llu (--all-epochs for one row "
                     "each):\n  a row starts at the epoch shown and sums its epochs' figures "
                     "and wall time; live and rss are at its last epoch\n",
                (unsigned long long)e->rows[0].epoch,
                (unsigned long long)e->rows[e->count - 1].last, e->count,
                (unsigned long long)1 << e->shift);
    if (a->sample_bytes)
        fputs("  free B, live objs and live B are estimates (a sampled trace)\n", out);
    fprintf(out, "  %-8s %8s %9s %9s %9s %9s %10s %9s %9s %10s\n", "", "epoch", "allocs",
            "frees", "alloc B", "free B", "live objs", "live B", "rss", "wall ms");
    if (every) {
        for (size_t i = 0; i < e->count; i++)
            epoch_row(out, "", &e->rows[i]);
        return;
    }
    epoch_row(out, "start", &e->rows[0]);
    if (peak && peak + 1 < e->count)
        epoch_row(out, "max live", &e->rows[peak]);
    epoch_row(out, "end", &e->rows[e->count - 1]);
    sparkline(out, e, "live B", row_live_max, row_has_live);
    sparkline(out, e, "rss", row_rss_max, row_has_rss);
}

/* The hint a trace of one epoch needs, before the rankings it makes flat. */
static void single_epoch(FILE *out, const churn_analysis *a)
{
    if (churn_report_single_epoch(a))
        fprintf(out,
                "\nOne epoch only: nothing marked units of work, so nothing can grow per "
                "epoch.\n  Mark them with %s.\n",
                CHURN_REPORT_EPOCH_SOURCES);
}

static void frame_text(void *ctx, const char *frame)
{
    fprintf(ctx, "        %s\n", frame);
}

static void lifetime_line(FILE *out, const uint64_t *buckets)
{
    char label[32];
    for (unsigned b = 0; b < CHURN_LIFETIME_BUCKETS; b++)
        if (buckets[b])
            fprintf(out, " %s:%llu", churn_lifetime_label(b, label, sizeof label),
                    (unsigned long long)buckets[b]);
    fputs("\n", out);
}

/* Objects that stay after a collection: the fit over the whole window mixes the ramp the
   collection ended with the one after it (a runtime that keeps 100 strings a turn and
   collects once shows a fraction of the growth that goes on), so the row names the window
   that fits what came after. */
static void since_text(FILE *out, const churn_growth *g, const churn_retained *r)
{
    if (r->kind != CHURN_RETENTION_RECLAIMED && r->kind != CHURN_RETENTION_STEADY &&
        r->reclaimed_epoch >= g->window_first && r->reclaimed_epoch < g->window_last)
        fprintf(out, " (the growth since: --epochs %llu:)",
                (unsigned long long)r->reclaimed_epoch + 1);
}

/* "leaked", "kept_until_exit: 20000 objects (1.2MiB) live before the teardown" and the like. */
static void retention_text(FILE *out, const churn_analysis *a, const churn_growth *g,
                           const churn_callsite *s)
{
    churn_retained r = churn_report_retention(a, g, s);
    char b[32];
    fputs(churn_report_retention_words(r.kind), out);
    if (r.kind == CHURN_RETENTION_KEPT)
        fprintf(out, ": %lld objects (%sB) live before the teardown freed them",
                (long long)r.count, human((double)r.bytes, b, sizeof b));
    if (r.reclaimed_count) {
        fprintf(out, "%s %lld objects freed at once in epoch %llu",
                r.kind == CHURN_RETENTION_RECLAIMED ? ":" : ";", (long long)r.reclaimed_count,
                (unsigned long long)r.reclaimed_epoch);
        since_text(out, g, &r);
    }
}

/* A sampled trace's row: its growth's standard error and the samples it rests on. */
static void estimate_text(FILE *out, const churn_analysis *a, const churn_growth *g,
                          const churn_callsite *s, uint64_t alloc_bytes)
{
    if (!a->sample_bytes)
        return;
    char b[32];
    fprintf(out, ", estimate +-%sB/epoch from %llu sample(s)",
            human(churn_report_growth_se(a, g, s, alloc_bytes), b, sizeof b),
            (unsigned long long)s->samples);
}

/* A function whose callsites fall in more than one class: "kept_until_exit (kept_until_exit
   249 objects (1.0MiB) in 1 stack; steady 12 objects (4.0KiB) in 3 stacks)", the row's class
   first; of one class, as a callsite's. */
static void function_retention_text(FILE *out, const churn_analysis *a, const churn_callsite *s,
                                    const churn_function *fn)
{
    enum churn_retention order[CHURN_RETENTION_KINDS];
    size_t n = churn_functions_classes(fn, 1, order);
    if (n < 2) {
        retention_text(out, a, &a->functions.growth, s);
        return;
    }
    churn_retained r = churn_report_retention(a, &a->functions.growth, s);
    fputs(churn_report_retention_words(r.kind), out);
    for (size_t i = 0; i < n; i++) {
        const struct churn_function_class *c = &fn->classes[order[i]];
        char b[32];
        fprintf(out, "%s%s %lld objects (%sB) in %zu stack%s", i ? "; " : " (",
                churn_report_retention_words(order[i]), (long long)c->count,
                human((double)c->bytes, b, sizeof b), c->stacks, c->stacks == 1 ? "" : "s");
    }
    fputs(")", out);
    if (r.reclaimed_count) {
        fprintf(out, ", %lld objects freed at once in epoch %llu", (long long)r.reclaimed_count,
                (unsigned long long)r.reclaimed_epoch);
        since_text(out, &a->functions.growth, &r);
    }
}

/* Rows left out of a ranking for neither growing nor holding anything live, said once. */
static void unranked_line(FILE *out, size_t left, const char *what)
{
    if (left)
        fprintf(out,
                "  (and %zu %s that neither grow nor hold anything live: --json lists "
                "them)\n",
                left, what);
}

static void functions(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    size_t n, left;
    churn_callsite **rows = churn_report_ranked_functions(a, o, &n, &left);
    char file[256], name[256];
    int as = n && churn_report_run_as(o, file, name, sizeof file);
    fprintf(out, "\nTop functions by retained growth (each the sum of its callsites):\n");
    if (!n)
        fputs("  (none)\n", out);
    for (size_t i = 0; i < n; i++) {
        const churn_callsite *s = rows[i];
        const churn_function *fn = churn_functions_of(&a->functions, s);
        char b1[32], b2[32], rate[32];
        char module[600];
        if (fn->module && as && !strcmp(fn->module, file))
            snprintf(module, sizeof module, "%s [%s]", name, file);
        else
            snprintf(module, sizeof module, "%s", fn->module ? fn->module : "?");
        if (fn->name)
            fprintf(out, "  #%zu %s (%s)", i + 1, fn->name, module);
        else /* an offset into the file, named as the stacks' frames name it */
            fprintf(out, "  #%zu %s+0x%llx", i + 1, fn->module ? fn->module : "?",
                    (unsigned long long)fn->offset);
        if (fn->caller)
            fprintf(out, " (called from %s)", fn->caller);
        if (fn->via)
            fprintf(out, " via %s%s", fn->via, fn->via_others ? " and others" : "");
        fprintf(out, ": %sB/epoch (%s objects/epoch, r2 %.2f), live %lld objects (%sB), "
                     "%llu allocs, %llu frees, %zu stack%s, ",
                human(churn_fit_slope(&s->bytes_fit), b1, sizeof b1),
                count_rate(churn_fit_slope(&s->count_fit), rate, sizeof rate),
                churn_fit_r2(&s->bytes_fit),
                (long long)s->live_count, human((double)s->live_bytes, b2, sizeof b2),
                (unsigned long long)fn->allocs, (unsigned long long)fn->frees, fn->stacks,
                fn->stacks == 1 ? "" : "s");
        function_retention_text(out, a, s, fn);
        if (fn->type)
            fprintf(out, ", type %s", fn->type);
        if (fn->temporary)
            fprintf(out, ", %llu temporary", (unsigned long long)fn->temporary);
        if (fn->pinned_bytes >= 1) {
            char b3[32];
            fprintf(out, ", pins %sB", human(fn->pinned_bytes, b3, sizeof b3));
        }
        estimate_text(out, a, &a->functions.growth, s, fn->alloc_bytes);
        fputs("\n", out);
    }
    unranked_line(out, left, "functions");
    free(rows);
}

static void callsites(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    size_t n, all, left = 0;
    churn_callsite **sites = churn_report_callsites(a, 0, &all);
    n = 0; /* known start-up allocations (suppress.h) are not ranked */
    for (size_t i = 0; i < all; i++) {
        if (churn_suppressions_of(o->suppress, sites[i]->stack))
            continue;
        if (!churn_report_ranked(a, &a->growth, sites[i]))
            left++;
        else if (!o->top || n < o->top)
            sites[n++] = sites[i];
    }
    churn_frames_source src = {&a->stacks, a->sym};
    fprintf(out, "\nTop callsites by retained growth:\n");
    if (!n)
        fputs("  (none)\n", out);
    for (size_t i = 0; i < n; i++) {
        const churn_callsite *s = sites[i];
        char b1[32], b2[32], rate[32];
        fprintf(out, "  #%zu %sB/epoch (%s objects/epoch, r2 %.2f), live %lld objects "
                     "(%sB), %llu allocs, %llu frees\n",
                i + 1, human(churn_fit_slope(&s->bytes_fit), b1, sizeof b1),
                count_rate(churn_fit_slope(&s->count_fit), rate, sizeof rate),
                churn_fit_r2(&s->bytes_fit),
                (long long)s->live_count, human((double)s->live_bytes, b2, sizeof b2),
                (unsigned long long)s->allocs, (unsigned long long)s->frees);
        fputs("      ", out);
        retention_text(out, a, &a->growth, s);
        const char *type = churn_report_type(a, s);
        if (type)
            fprintf(out, ", type %s", type);
        estimate_text(out, a, &a->growth, s, s->alloc_bytes);
        fputs("\n      lifetimes:", out);
        lifetime_line(out, s->lifetime);
        size_t total = churn_frames_each(&src, s->stack, TEXT_FRAMES, frame_text, out);
        if (total > TEXT_FRAMES)
            fprintf(out, "        ... %zu more frame(s)\n", total - TEXT_FRAMES);
    }
    unranked_line(out, left, "callsites");
    free(sites);
}

/* --freed: what the window released, by function and by callsite. */
static void freed(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    if (!a->has_freed)
        return;
    char b[32], w[64];
    if (a->freed.has_first && a->freed.has_last)
        snprintf(w, sizeof w, "%llu..%llu", (unsigned long long)a->freed.first,
                 (unsigned long long)a->freed.last);
    else if (a->freed.has_first)
        snprintf(w, sizeof w, "%llu..", (unsigned long long)a->freed.first);
    else
        snprintf(w, sizeof w, "..%llu", (unsigned long long)a->freed.last);
    size_t n;
    churn_callsite **rows = churn_growth_sorted_by_freed(&a->functions.growth, o->top, &n);
    fprintf(out, "\nFreed in epochs %s, by function:\n", w);
    if (!n)
        fputs("  (nothing)\n", out);
    for (size_t i = 0; i < n; i++) {
        const churn_callsite *s = rows[i];
        const churn_function *fn = churn_functions_of(&a->functions, s);
        if (fn->name)
            fprintf(out, "  #%zu %s (%s)", i + 1, fn->name, fn->module ? fn->module : "?");
        else
            fprintf(out, "  #%zu %s+0x%llx", i + 1, fn->module ? fn->module : "?",
                    (unsigned long long)fn->offset);
        fprintf(out, ": %llu objects (%sB), %llu of them from before the window, allocated "
                     "in epochs %llu..%llu\n",
                (unsigned long long)s->freed_count, human((double)s->freed_bytes, b, sizeof b),
                (unsigned long long)s->freed_old_count, (unsigned long long)s->freed_from,
                (unsigned long long)s->freed_to);
    }
    free(rows);
    rows = churn_growth_sorted_by_freed(&a->growth, o->top, &n);
    churn_frames_source src = {&a->stacks, a->sym};
    fprintf(out, "Freed in epochs %s, by callsite:\n", w);
    if (!n)
        fputs("  (nothing)\n", out);
    for (size_t i = 0; i < n; i++) {
        const churn_callsite *s = rows[i];
        fprintf(out, "  #%zu %llu objects (%sB), %llu of them from before the window, "
                     "allocated in epochs %llu..%llu\n", i + 1,
                (unsigned long long)s->freed_count, human((double)s->freed_bytes, b, sizeof b),
                (unsigned long long)s->freed_old_count, (unsigned long long)s->freed_from,
                (unsigned long long)s->freed_to);
        size_t total = churn_frames_each(&src, s->stack, 3, frame_text, out);
        if (total > 3)
            fprintf(out, "        ... %zu more frame(s)\n", total - 3);
    }
    free(rows);
}

/* What the ranking left out, once per rule that matched. */
static void suppressed(FILE *out, const churn_report_options *o)
{
    const churn_suppressions *s = o->suppress;
    int any = 0;
    for (size_t i = 0; s && i < s->count; i++) {
        const churn_suppression *r = &s->rules[i];
        if (!r->callsites)
            continue;
        if (!any++)
            fputs("\nNot ranked, known allocations that are not leaks (--suppressions, "
                  "docs/analyzer.md):\n", out);
        char b[32];
        fprintf(out, "  %s: live %lld objects (%sB) in %llu callsite(s): %s\n", r->rule,
                (long long)r->live_count, human((double)r->live_bytes, b, sizeof b),
                (unsigned long long)r->callsites, r->what);
    }
}

static const char *signed_human(int known, double v, char *buf, size_t len)
{
    return known ? human(v, buf, len) : "-";
}

/* books: the trace names an allocator whose counters the writer reads.  An epoch that the
   exit closed (exit_epoch; UINT64_MAX: none) carries no reading of its own (COUNTERS_STALE),
   so its free-resident figure is missing, and a run shorter than the writer's first pass has
   no reading at all; nor has an epoch that ended before the writer read the counters again. */
static void frag_row(FILE *out, const char *label, const churn_frag_row *r, int books,
                     uint64_t exit_epoch)
{
    char b[8][32], note[160];
    /* Without this epoch's books what the allocator holds free is not known, and RSS less the
       live set's spans holds it as well as what is outside the heap: the two together are
       said, not one of them (outside_with_free in the JSON). */
    int outside = r->has_rss && !r->rss_stale && !r->not_resident;
    int together = outside && churn_frag_outside_with_free(r, books);
    const char *why = r->not_resident                     ? "  heap not all resident (see warnings)"
                      : r->books_stale                    ? "  books stale (see warnings)"
                      : r->rss_stale                      ? "  rss stale (see warnings)"
                      : books && r->row && r->row->counters_stale
                          ? (r->epoch == exit_epoch ? "  books not read (closed at the exit)"
                                                    : "  books read before its end (see warnings)")
                          : "";
    if (together)
        snprintf(note, sizeof note, "%s%sfree-res and outside %s together", why,
                 *why ? ": " : "  books not read: ",
                 human((double)r->outside_heap_bytes, b[5], 32));
    else
        snprintf(note, sizeof note, "%s", why);
    fprintf(out, "  %-5s %8llu %9s %9s %9s %9s %9s %9s %9s %9s%s\n", label,
            (unsigned long long)r->epoch, signed_human(r->has_rss, (double)r->rss_bytes, b[0], 32),
            human((double)r->live_bytes, b[1], 32), human((double)r->slack_bytes, b[2], 32),
            human((double)r->pinned_bytes, b[3], 32),
            signed_human(r->has_books, (double)r->free_resident_bytes, b[4], 32),
            signed_human(outside && !together, (double)r->outside_heap_bytes, b[5], 32),
            signed_human(r->has_own, (double)r->own_bytes, b[7], 32),
            signed_human(r->row != NULL, (double)r->residual_bytes, b[6], 32), note);
}

static void pinned_text(FILE *out, const churn_frag_part *p)
{
    char b1[32], b2[32];
    double pinned = churn_frag_pinned(p);
    fprintf(out, "pinned %sB for %sB live in %llu objects (%.2f pinned B per live B)",
            human(pinned, b1, sizeof b1), human((double)p->live_bytes, b2, sizeof b2),
            (unsigned long long)p->count, p->live_bytes ? pinned / (double)p->live_bytes : 0.0);
}

static const churn_frag_part *part_of(const churn_frag_part *parts, size_t n, uint64_t key)
{
    for (size_t i = 0; i < n; i++)
        if (parts[i].key == key)
            return &parts[i];
    return NULL;
}

/* Who pins, in one block: the ranking where the program held its survivors (before the
   teardown, or at the last epoch), each row with its figures at the most pinned epoch when
   that is another, then the callsites that rank there only. */
static void pinning(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    const churn_fragmentation *f = &a->frag;
    const churn_frag_part *sites = f->has_before ? f->before_sites : f->sites;
    size_t nsites = f->has_before ? f->nbefore : f->nsites;
    size_t n = o->top && o->top < nsites ? o->top : nsites;
    size_t npeak = f->has_peak ? (o->top && o->top < f->npeak ? o->top : f->npeak) : 0;
    if (!n && !npeak)
        return;
    churn_frames_source src = {&a->stacks, a->sym};
    fputs("Who pins: callsites whose survivors pin the most span bytes (", out);
    if (f->has_before)
        fprintf(out, "before the teardown, at epoch %llu", (unsigned long long)f->before_epoch);
    else
        fputs("at the last epoch", out);
    if (f->has_peak)
        fprintf(out, "; and at epoch %llu, the most pinned bytes",
                (unsigned long long)f->peak_epoch);
    fputs("):\n", out);
    size_t rank = 0;
    for (size_t i = 0; i < n + npeak; i++) {
        const churn_frag_part *p = i < n ? &sites[i] : &f->peak_sites[i - n];
        const churn_frag_part *at_peak =
            f->has_peak ? part_of(f->peak_sites, npeak, p->key) : NULL;
        if (i >= n && part_of(sites, n, p->key))
            continue; /* shown with its figures at the peak already */
        fprintf(out, "  #%zu ", ++rank);
        if (i < n)
            pinned_text(out, p);
        if (at_peak) {
            fprintf(out, "%sat epoch %llu: ", i < n ? "; " : "",
                    (unsigned long long)f->peak_epoch);
            pinned_text(out, at_peak);
        }
        fputc('\n', out);
        size_t total = churn_frames_each(&src, p->key, 3, frame_text, out);
        if (total > 3)
            fprintf(out, "        ... %zu more frame(s)\n", total - 3);
    }
}

/* First, peak and last epochs: the peak by RSS, or by span bytes without RSS. */
static void fragmentation(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    const churn_fragmentation *f = &a->frag;
    if (!f->nrows)
        return;
    static const char *const books[] = {"none recorded", "glibc mallinfo2",
                                        "gperftools MallocExtension", "tcmalloc counters",
                                        "jemalloc stats"};
    fprintf(out, "\nLive vs fragmented (model %s from the %s, page %llu B; books: %s):\n",
            churn_model_name(&f->model), f->from_option ? "--model option" : "trace",
            (unsigned long long)f->model.page, books[f->books]);
    fprintf(out, "  %-5s %8s %9s %9s %9s %9s %9s %9s %9s %9s\n", "", "epoch", "rss", "live",
            "slack", "pinned", "free-res", "outside", "libchurn", "residual");
    churn_frag_row first, peak, last, r;
    churn_frag_row_at(f, 0, &first);
    peak = first;
    for (size_t i = 1; i < f->nrows; i++) {
        churn_frag_row_at(f, i, &r);
        if (r.has_rss ? r.rss_bytes > peak.rss_bytes : r.span_bytes > peak.span_bytes)
            peak = r;
    }
    churn_frag_row_at(f, f->nrows - 1, &last);
    int read = f->books != CHURN_BOOKS_NONE;
    uint64_t exit_epoch = a->has_exit ? a->last_epoch : UINT64_MAX;
    frag_row(out, "first", &first, read, exit_epoch);
    frag_row(out, "peak", &peak, read, exit_epoch);
    /* The exit's epoch has no reading of the books: the last epoch before it with a reading
       has the last free-resident figure there is, and is shown above the exit's row. */
    if (churn_frag_last_read(f, exit_epoch, &r)) {
        frag_row(out, "last", &r, read, exit_epoch);
        frag_row(out, "exit", &last, read, exit_epoch);
    } else {
        frag_row(out, "last", &last, read, exit_epoch);
    }
    const churn_frag_row *end = churn_frag_last_read(f, exit_epoch, &r) ? &r : &last;
    if (first.unplaced_bytes || end->unplaced_bytes) {
        char b1[32], b2[32];
        fprintf(out, "  of live, carried in without addresses (a forked child's copies of its "
                     "parent's objects, or those of segments the ring overwrote): first %s, "
                     "last %s; no span is placed for them, so their slack and pinning are in "
                     "the residual\n",
                human((double)first.unplaced_bytes, b1, sizeof b1),
                human((double)end->unplaced_bytes, b2, sizeof b2));
    }
    if (!churn_epochs_exact(&a->epochs))
        fprintf(out, "  peak: the bucket end with the most RSS (buckets of up to %llu epochs, the "
                     "epochs table's resolution)\n",
                (unsigned long long)1 << a->epochs.shift);
    /* Below the detector's threshold the estimate is mostly the allocator's own overhead and
       libchurn's thread stacks, not memory held elsewhere: the JSON has it every epoch. */
    char said[512];
    if ((first.has_untraced || last.has_untraced) && churn_report_untraced(a, said, sizeof said)) {
        char b1[32], b2[32], b3[32];
        fprintf(out, "  of outside, not traced (the shim's estimate of memory no traced allocator "
                     "explains): first %s, peak %s, last %s\n",
                human((double)first.untraced_bytes, b1, sizeof b1),
                human((double)peak.untraced_bytes, b2, sizeof b2),
                human((double)last.untraced_bytes, b3, sizeof b3));
    }
    /* What the program held, not what its exit left: before the teardown where there is
       one, and at the most pinned epoch when that is another. */
    pinning(out, a, o);
}

/* The sign human() leaves out of a non-negative figure. */
static const char *plus(double v)
{
    return v >= 0 ? "+" : "";
}

static void trends(FILE *out, const churn_analysis *a)
{
    churn_trends t =
        churn_trends_compute(&a->epochs, a->growth.window_first, a->growth.window_last);
    char b[32];
    fprintf(out, "\nTrends (least-squares change per epoch, over epochs %llu..%llu):\n",
            (unsigned long long)a->steady.first, (unsigned long long)a->steady.last);
    fprintf(out, "  live bytes:             %s%sB per epoch (r2 %.2f)\n",
            plus(t.live_bytes_per_epoch), human(t.live_bytes_per_epoch, b, sizeof b),
            t.live_bytes_r2);
    fprintf(out, "  rss:                    %s%sB per epoch (r2 %.2f)\n",
            plus(t.rss_bytes_per_epoch), human(t.rss_bytes_per_epoch, b, sizeof b),
            t.rss_bytes_r2);
    /* Rounded first, so that a slope of -0.0001 ms prints +0.000, not -0.000. */
    double ms = round(t.wall_ns_per_epoch / 1e3) / 1e3;
    fprintf(out, "  epoch duration:         %+.3f ms per epoch (r2 %.2f)\n", ms == 0 ? 0.0 : ms,
            t.wall_ns_r2);
    if (t.rank_of_buckets)
        fprintf(out, "  duration vs live bytes: correlation %.2f (rank %.2f, over %zu buckets' "
                     "means)\n",
                t.duration_vs_live_correlation, t.duration_vs_live_rank_correlation,
                t.rank_rows);
    else
        fprintf(out, "  duration vs live bytes: correlation %.2f (rank %.2f)\n",
                t.duration_vs_live_correlation, t.duration_vs_live_rank_correlation);
}

static void warnings(FILE *out, const churn_warnings *w)
{
    if (!w->count)
        return;
    fputs("\nWarnings:\n", out);
    size_t n;
    char **lines = churn_report_folded_warnings(w, &n);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "  - %s\n", lines[i]);
        free(lines[i]);
    }
    free(lines);
    if (w->suppressed)
        fprintf(out, "  - %zu more warning(s) not shown\n", w->suppressed);
}

void churn_report_text(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    churn_report_types(a);
    header(out, a, o);
    verdict(out, a, o);
    churn_report_steady_line(out, a);
    fputc('\n', out);
    totals(out, a);
    single_epoch(out, a);
    functions(out, a, o);
    callsites(out, a, o);
    suppressed(out, o);
    freed(out, a, o);
    peak_callsites(out, a, o);
    temporary_callsites(out, a, o);
    fragmentation(out, a, o);
    fputs("\nLifetimes in epochs (all callsites):", out);
    lifetime_line(out, a->lifetime);
    trends(out, a);
    epochs(out, a);
    churn_report_collect_warnings(a);
    warnings(out, a->warn);
}
