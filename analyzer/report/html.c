#include "report/html.h"

#include <math.h>
#include <stdlib.h>

#include "export/callers.h"
#include "export/flame.h"
#include "export/svg.h"
#include "symbols/frames.h"
#include "analyze/trends.h"
#include "base/util.h"
#include "report/verdict.h"

#define CHART_W 380
#define CHART_H 150
#define CHART_POINTS 600 /* beyond this many epochs, each point is a bucket's min and max */
#define STACK_SHOWN 8

/* Bytes get binary prefixes; other units are printed as they are. */
static const char *human(double v, const char *unit, char *buf, size_t len)
{
    static const char *const prefix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
    double m = fabs(v);
    size_t u = 0;
    while (m >= 1024 && unit[0] == 'B' && u + 1 < sizeof prefix / sizeof prefix[0]) {
        m /= 1024;
        u++;
    }
    if (unit[0] != 'B') /* ms: often below 1, three digits; whole above 1000 */
        snprintf(buf, len, m < 1000 ? "%s%.3g %s" : "%s%.0f %s", v < 0 ? "-" : "", m, unit);
    else if (u == 0)
        snprintf(buf, len, "%s%.0f %s", v < 0 ? "-" : "", m, unit);
    else
        snprintf(buf, len, "%s%.1f %s%s", v < 0 ? "-" : "", m, prefix[u], unit);
    return buf;
}

/* An objects-per-epoch slope, as the text report prints it (2000, not 2e+03). */
static const char *count_rate(double v, char *buf, size_t len)
{
    snprintf(buf, len, v > -1000 && v < 1000 ? "%+.3g" : "%+.0f", v);
    return buf;
}

static const char style[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1240px;padding:0 16px 40px;"
    "color:#1d1d1f;background:#fafaf7}\n"
    "h1{font-size:22px;margin:18px 0 2px}h2{font-size:17px;margin:28px 0 8px;"
    "border-bottom:1px solid #ddd;padding-bottom:4px}\n"
    ".meta{color:#555;font-size:13px}\n"
    ".cards{display:flex;flex-wrap:wrap;gap:10px}.card{background:#fff;border:1px solid #ddd;"
    "border-radius:6px;padding:8px 12px;min-width:150px}.card b{display:block;font-size:18px}\n"
    ".card span{color:#666;font-size:12px}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:12px}.chart{background:#fff;border:1px solid #ddd;"
    "border-radius:6px}\n"
    "table{border-collapse:collapse;width:100%;background:#fff}"
    "th,td{border-bottom:1px solid #e4e4e4;"
    "padding:4px 6px;text-align:right;vertical-align:top}th{background:#f0f0ec}\n"
    "td.stack,th.stack{text-align:left;font:12px/1.35 ui-monospace,monospace;"
    "overflow-wrap:anywhere;word-break:break-word}\n"
    "details summary{cursor:pointer;color:#0645ad}\n"
    "svg.flame{width:100%;height:auto;border:1px solid #ddd;border-radius:6px;background:#fff}\n"
    ".warn li{color:#8a4b00}\n"
    ".verdict{background:#fff;border:1px solid #c9c9c0;border-left:4px solid #0645ad;"
    "border-radius:6px;padding:6px 14px;margin-top:12px}.verdict p{margin:6px 0}\n"
    ".window{color:#555;font-size:13px}\n";

/* A row is one epoch or a bucket of them (epochs.h): value is the epoch's, or the bucket's
   at its end (live, RSS) or its mean (wall); lo and hi its epochs' extremes. */
typedef struct series {
    const char *title, *unit;
    double (*value)(const churn_epoch_row *r);
    double (*lo)(const churn_epoch_row *r);
    double (*hi)(const churn_epoch_row *r);
    /* The scale leaves out the first and the last epoch (start-up before the first epoch
       began, the tail an exit ended), which are often far longer than the rest: they are
       drawn at the top and named instead. */
    int ends_off_scale;
} series;

static double live_bytes(const churn_epoch_row *r)
{
    return (double)r->live_bytes;
}

static double rss_bytes(const churn_epoch_row *r)
{
    return (double)r->rss_bytes;
}

static double wall_ms(const churn_epoch_row *r)
{
    return (double)r->wall_ns / 1e6 / (double)(r->n_summary ? r->n_summary : 1);
}

static double live_lo(const churn_epoch_row *r)
{
    return (double)r->live_min;
}

static double live_hi(const churn_epoch_row *r)
{
    return (double)r->live_max;
}

static double rss_lo(const churn_epoch_row *r)
{
    return (double)r->rss_min;
}

static double rss_hi(const churn_epoch_row *r)
{
    return (double)r->rss_max;
}

static double wall_lo(const churn_epoch_row *r)
{
    return (double)r->wall_min / 1e6;
}

static double wall_hi(const churn_epoch_row *r)
{
    return (double)r->wall_max / 1e6;
}

static int has_row(const churn_epoch_row *r, const series *s)
{
    return s->value != live_bytes ? r->has_summary : 1;
}

/* A line chart of one per-epoch series: epochs on x, the value on y from 0 (or the minimum
   when negative) to the maximum. */
static void chart(FILE *out, const churn_epochs *e, const series *s)
{
    const double left = 58, right = 10, top = 24, bottom = 22;
    double lo = 0, hi = 0;
    size_t n = 0, first_row = 0, last_row = 0;
    uint64_t first = 0, last = 0;
    for (size_t i = 0; i < e->count; i++) {
        if (!has_row(&e->rows[i], s))
            continue;
        if (!n)
            first_row = i;
        last_row = i;
        n++;
    }
    int clip = s->ends_off_scale && n > 4;
    for (size_t i = 0, k = 0; i < e->count; i++) {
        if (!has_row(&e->rows[i], s))
            continue;
        if (!k++)
            first = e->rows[i].epoch;
        last = e->rows[i].epoch;
        if (clip && (i == first_row || i == last_row))
            continue;
        hi = fmax(hi, s->hi(&e->rows[i]));
        lo = fmin(lo, s->lo(&e->rows[i]));
    }
    char b1[32], b2[32];
    fprintf(out, "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">"
                 "<text x=\"8\" y=\"16\" font-size=\"13\" font-weight=\"bold\">",
            CHART_W, CHART_H, CHART_W, CHART_H);
    churn_html_escape(out, s->title);
    fputs("</text>", out);
    if (!n) {
        fputs("<text x=\"8\" y=\"60\" font-size=\"12\" fill=\"#777\">no data in this trace</text>"
              "</svg>\n", out);
        return;
    }
    if (hi <= lo)
        hi = lo + 1;
    double span = last > first ? (double)(last - first) : 1;
    double pw = CHART_W - left - right, ph = CHART_H - top - bottom;
    fprintf(out, "<g font-size=\"10\" fill=\"#555\"><text x=\"%g\" y=\"%g\" text-anchor=\"end\">%s"
                 "</text><text x=\"%g\" y=\"%g\" text-anchor=\"end\">%s</text>"
                 "<text x=\"%g\" y=\"%d\">epoch %llu</text><text x=\"%g\" y=\"%d\" "
                 "text-anchor=\"end\">%llu</text></g>",
            left - 4, top + 8, human(hi, s->unit, b1, sizeof b1), left - 4, top + ph,
            human(lo, s->unit, b2, sizeof b2), left, CHART_H - 6, (unsigned long long)first,
            CHART_W - right, CHART_H - 6, (unsigned long long)last);
    if (clip) {
        /* the first and last epochs' values, which the scale left out, in the title line */
        char b3[32], b4[32];
        double v0 = s->value(&e->rows[first_row]), v1 = s->value(&e->rows[last_row]);
        fprintf(out, "<text x=\"%g\" y=\"%g\" font-size=\"10\" fill=\"#555\" "
                     "text-anchor=\"end\">first %s, last %s: off scale when above</text>",
                CHART_W - right - 4, top + 11, human(v0, s->unit, b3, sizeof b3),
                human(v1, s->unit, b4, sizeof b4));
    }
    fprintf(out, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" "
                 "stroke=\"#ccc\"/><polyline fill=\"none\" stroke=\"#c0392b\" "
                 "stroke-width=\"1.5\" points=\"",
            left, top, pw, ph);
    /* Many rows: each group of rows contributes its lowest and highest value, so that spikes
       survive the thinning. */
    size_t per = n > CHART_POINTS ? (n + CHART_POINTS - 1) / CHART_POINTS : 1, k = 0;
    double bmin = 0, bmax = 0, bx = 0;
    for (size_t i = 0; i < e->count; i++) {
        const churn_epoch_row *r = &e->rows[i];
        if (!has_row(r, s))
            continue;
        /* only the ends can be above hi */
        double vlo = fmin(s->lo(r), hi), vhi = fmin(s->hi(r), hi);
        if (k % per == 0) {
            bmin = vlo;
            bmax = vhi;
            bx = left + pw * (double)(r->epoch - first) / span;
        }
        bmin = fmin(bmin, vlo);
        bmax = fmax(bmax, vhi);
        if (++k % per == 0 || k == n) {
            fprintf(out, "%.1f,%.1f ", bx, top + ph * (1 - (bmin - lo) / (hi - lo)));
            if (per > 1 || bmax > bmin)
                fprintf(out, "%.1f,%.1f ", bx, top + ph * (1 - (bmax - lo) / (hi - lo)));
        }
    }
    fputs("\"/></svg>\n", out);
}

/* The parts of RSS over the epochs, stacked (docs/fragmentation.md).  A part below zero
   (glibc's books after a trim, a negative residual) is drawn as zero; the legend gives the
   last epoch's figures as they are. */
#define FRAG_W 780
#define FRAG_H 220
#define FRAG_PARTS 7

static void frag_parts(const churn_frag_row *r, double *v)
{
    double parts[FRAG_PARTS] = {(double)r->live_bytes, (double)r->slack_bytes,
                                (double)r->pinned_bytes, (double)r->free_resident_bytes,
                                (double)r->residual_bytes, (double)r->outside_heap_bytes,
                                (double)r->own_bytes};
    for (int k = 0; k < FRAG_PARTS; k++)
        v[k] = parts[k] > 0 ? parts[k] : 0;
}

static void fragmentation(FILE *out, const churn_analysis *a)
{
    const churn_fragmentation *f = &a->frag;
    size_t n = 0, first = 0;
    churn_frag_row r;
    for (size_t i = 0; i < f->nrows; i++) {
        churn_frag_row_at(f, i, &r);
        if (r.has_rss && n++ == 0)
            first = i;
    }
    if (n < 2)
        return;
    static const char *const names[FRAG_PARTS] = {"live", "slack", "pinned in spans",
                                                  "free, resident", "residual",
                                                  "outside the allocator", "libchurn's own"};
    static const char *const colors[FRAG_PARTS] = {"#c0392b", "#e67e22", "#8e44ad",
                                                   "#2980b9", "#95a5a6", "#27ae60", "#34495e"};
    const double left = 64, right = 10, top = 12, bottom = 22;
    const double pw = FRAG_W - left - right, ph = FRAG_H - top - bottom;
    double hi = 1;
    /* the first, peak (by RSS) and last epochs, as the text report shows them: the last
       with a reading of the books, then the exit's, when the exit's has none */
    churn_frag_row shown[4];
    const char *label[4] = {"first", "peak RSS", "last", "exit"};
    churn_frag_row_at(f, first, &shown[0]);
    shown[1] = shown[0];
    int cols = 3;
    if (churn_frag_last_read(f, a->has_exit ? a->last_epoch : UINT64_MAX, &shown[2])) {
        churn_frag_row_at(f, f->nrows - 1, &shown[3]);
        cols = 4;
    } else {
        churn_frag_row_at(f, f->nrows - 1, &shown[2]);
    }
    uint64_t e0 = shown[0].epoch, e1 = e0;
    for (size_t i = first; i < f->nrows; i++) {
        churn_frag_row_at(f, i, &r);
        if (!r.has_rss)
            continue;
        double v[FRAG_PARTS], sum = 0;
        frag_parts(&r, v);
        for (int k = 0; k < FRAG_PARTS; k++)
            sum += v[k];
        hi = fmax(hi, sum);
        e1 = r.epoch;
        if (r.rss_bytes > shown[1].rss_bytes)
            shown[1] = r;
    }
    double span = e1 > e0 ? (double)(e1 - e0) : 1;
    size_t per = n > CHART_POINTS ? (n + CHART_POINTS - 1) / CHART_POINTS : 1;
    char b[32];
    fprintf(out, "<h2>Live vs fragmented (model %s)</h2>\n<svg class=\"chart\" width=\"%d\" "
                 "height=\"%d\" viewBox=\"0 0 %d %d\"><g font-size=\"10\" fill=\"#555\">"
                 "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%s</text><text x=\"%g\" "
                 "y=\"%g\" text-anchor=\"end\">0</text><text x=\"%g\" y=\"%d\">epoch %llu"
                 "</text><text x=\"%g\" y=\"%d\" text-anchor=\"end\">%llu</text></g>",
            churn_model_name(&f->model), FRAG_W, FRAG_H, FRAG_W, FRAG_H, left - 4, top + 8,
            human(hi, "B", b, sizeof b), left - 4, top + ph, left, FRAG_H - 6,
            (unsigned long long)e0, FRAG_W - right, FRAG_H - 6, (unsigned long long)e1);
    /* One polygon per part: its upper edge left to right, then the lower edge back. */
    for (int k = FRAG_PARTS - 1; k >= 0; k--) {
        fprintf(out, "<polygon fill=\"%s\" fill-opacity=\"0.85\" points=\"", colors[k]);
        for (int edge = 0; edge < 2; edge++) {
            size_t seen = 0;
            for (size_t j = 0; j < f->nrows; j++) {
                size_t i = edge ? f->nrows - 1 - j : j;
                churn_frag_row_at(f, i, &r);
                if (!r.has_rss || (seen++ % per && seen != n))
                    continue;
                double v[FRAG_PARTS], below = 0;
                frag_parts(&r, v);
                for (int q = 0; q < k; q++)
                    below += v[q];
                double y = edge ? below : below + v[k];
                fprintf(out, "%.1f,%.1f ", left + pw * (double)(r.epoch - e0) / span,
                        top + ph * (1 - y / hi));
            }
        }
        fputs("\"/>", out);
    }
    fputs("</svg>\n<table><tr><th class=\"stack\">part</th>", out);
    for (int c = 0; c < cols; c++)
        fprintf(out, "<th>%s (epoch %llu)</th>", label[c], (unsigned long long)shown[c].epoch);
    fputs("</tr>\n", out);
    for (int k = 0; k <= FRAG_PARTS; k++) {
        if (k < FRAG_PARTS)
            fprintf(out, "<tr><td class=\"stack\"><span style=\"color:%s\">&#9632;</span> %s"
                         "</td>", colors[k], names[k]);
        else
            fputs("<tr><td class=\"stack\">RSS</td>", out);
        for (int c = 0; c < cols; c++) {
            const churn_frag_row *sr = &shown[c];
            long long v[FRAG_PARTS + 1] = {(long long)sr->live_bytes, (long long)sr->slack_bytes,
                                           sr->pinned_bytes, (long long)sr->free_resident_bytes,
                                           sr->residual_bytes, sr->outside_heap_bytes,
                                           (long long)sr->own_bytes, (long long)sr->rss_bytes};
            /* a part the epoch has no figure for: its books or RSS not read, or stale */
            int together = churn_frag_outside_with_free(sr, f->books != CHURN_BOOKS_NONE);
            int known[FRAG_PARTS + 1] = {1, 1, 1, sr->has_books, sr->row != NULL,
                                         sr->has_rss && !sr->rss_stale && !together,
                                         sr->has_own, sr->has_rss};
            /* without the epoch's books, what the allocator keeps free is in the figure RSS
               leaves outside the live set: the two are given together, as in the text */
            if (k == 5 && together && sr->has_rss && !sr->rss_stale)
                fprintf(out, "<td>- (with free: %s)</td>",
                        human((double)v[k], "B", b, sizeof b));
            else
                fprintf(out, "<td>%s</td>",
                        known[k] ? human((double)v[k], "B", b, sizeof b) : "-");
        }
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
    const churn_frag_row *end = &shown[2]; /* the last with books, as in the text report */
    if (shown[0].unplaced_bytes || end->unplaced_bytes) {
        char b2[32];
        fprintf(out, "<p>Of live, %s (first) and %s (last) were carried in without addresses "
                     "(a forked child's copies of its parent's objects, or those of segments "
                     "the ring overwrote): no span is placed for them, so their slack and "
                     "pinning are in the residual.</p>\n",
                human((double)shown[0].unplaced_bytes, "B", b, sizeof b),
                human((double)end->unplaced_bytes, "B", b2, sizeof b2));
    }
}

static void header(FILE *out, const churn_analysis *a, const churn_report_options *o)
{
    char window[64];
    churn_window_label(a, window, sizeof window);
    fputs("<h1>libchurn review: ", out);
    churn_html_escape(out, o->trace_path);
    fprintf(out, "</h1>\n<div class=\"meta\">pid %llu, %s, allocator ",
            (unsigned long long)a->info->pid, a->events ? "events" : "epoch summaries only");
    churn_html_escape(out, a->allocator ? a->allocator : "?");
    char how[64];
    fprintf(out, ", %zu segment(s) used, %llu overwritten by the ring, %s, %s</div>\n", a->segments_used,
            churn_report_segments_dropped(a), window, churn_report_exit_text(a, how, sizeof how));
}

/* The verdict first (verdict.h), then the window it is over and how to change it. */
static void verdict(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    churn_verdict v;
    churn_verdict_make(a, o, &v);
    fputs("<div class=\"verdict\"><h2>Verdict</h2>\n", out);
    for (size_t i = 0; i < v.nsentences; i++) {
        fputs("<p>", out);
        churn_html_escape(out, v.sentences[i]);
        fputs("</p>\n", out);
    }
    churn_verdict_free(&v);
    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    if (!f) {
        fputs("churn-analyze: out of memory\n", stderr);
        exit(1);
    }
    churn_report_steady_line(f, a);
    fclose(f);
    fputs("<p class=\"window\">", out);
    churn_html_escape(out, line);
    fputs("</p></div>\n", out);
    free(line);
}

static void card(FILE *out, const char *value, const char *label)
{
    fputs("<div class=\"card\"><b>", out);
    churn_html_escape(out, value);
    fputs("</b><span>", out);
    churn_html_escape(out, label);
    fputs("</span></div>\n", out);
}

static void summary(FILE *out, churn_analysis *a, const churn_trends *t)
{
    char b[64], l[96];
    fputs("<h2>Summary</h2>\n<div class=\"cards\">\n", out);
    snprintf(b, sizeof b, "%llu", (unsigned long long)a->totals.allocs);
    card(out, b, "allocations");
    card(out, human((double)a->totals.alloc_bytes, "B", b, sizeof b), "allocated");
    const churn_epochs *e = &a->epochs;
    if (churn_epochs_exact(e)) {
        snprintf(b, sizeof b, "%llu", (unsigned long long)e->count);
        card(out, b, "epochs");
    } else {
        snprintf(b, sizeof b, "%llu..%llu", (unsigned long long)e->rows[0].epoch,
                 (unsigned long long)e->rows[e->count - 1].last);
        snprintf(l, sizeof l, "epochs, charted in %zu buckets of %llu", e->count,
                 (unsigned long long)1 << e->shift);
        card(out, b, l);
    }
    snprintf(l, sizeof l, "live at the end (%llu objects)", (unsigned long long)a->leaked_count);
    card(out, human((double)a->leaked_bytes, "B", b, sizeof b), l);
    if (churn_peak_known(a)) {
        snprintf(l, sizeof l, "peak live (%lld objects, epoch %llu)",
                 (long long)a->peak.peak_count,
                 (unsigned long long)(a->peak.has_peak ? a->peak.peak_epoch : a->first_epoch));
        card(out, human((double)a->peak.peak_bytes, "B", b, sizeof b), l);
        snprintf(b, sizeof b, "%llu", (unsigned long long)a->totals.temporary);
        card(out, b, "temporary allocations");
    } else {
        card(out, "not known", a->sample_bytes ? "peak live and temporary allocations (a "
                                                 "sampled trace)"
                                               : "peak live and temporary allocations "
                                                 "(CHURN_EVENTS=0)");
    }
    snprintf(l, sizeof l, "live bytes per epoch (r2 %.2f)", t->live_bytes_r2);
    card(out, human(t->live_bytes_per_epoch, "B", b, sizeof b), l);
    snprintf(l, sizeof l, "RSS per epoch (r2 %.2f)", t->rss_bytes_r2);
    card(out, human(t->rss_bytes_per_epoch, "B", b, sizeof b), l);
    snprintf(b, sizeof b, "%.2f", t->duration_vs_live_correlation);
    card(out, b, "epoch duration vs live bytes (r)");
    fputs("</div>\n", out);
    char note[256];
    if (churn_analysis_estimate_note(a, note, sizeof note)) {
        fputs("<p class=\"warn\">Sampled trace: ", out);
        churn_html_escape(out, note);
        fputs(" (docs/analyzer.md, Sampled traces).</p>\n", out);
    }
    if (churn_report_single_epoch(a)) {
        fputs("<p class=\"warn\">One epoch only: nothing marked units of work, so nothing can "
              "grow per epoch. Mark them with ", out);
        churn_html_escape(out, CHURN_REPORT_EPOCH_SOURCES);
        fputs(".</p>\n", out);
    }
}

static void lifetimes(FILE *out, const uint64_t *buckets)
{
    uint64_t max = 1;
    for (unsigned i = 0; i < CHURN_LIFETIME_BUCKETS; i++)
        if (buckets[i] > max)
            max = buckets[i];
    fputs("<h2>Lifetimes in epochs</h2>\n", out);
    fprintf(out, "<svg class=\"chart\" width=\"%d\" height=\"%d\">", 560,
            CHURN_LIFETIME_BUCKETS * 18 + 8);
    char label[32];
    for (unsigned i = 0; i < CHURN_LIFETIME_BUCKETS; i++) {
        double w = 360.0 * (double)buckets[i] / (double)max;
        int y = 4 + (int)i * 18;
        fprintf(out, "<text x=\"90\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%s</text>"
                     "<rect x=\"96\" y=\"%d\" width=\"%.1f\" height=\"14\" fill=\"%s\"/>"
                     "<text x=\"%.1f\" y=\"%d\" font-size=\"11\">%llu</text>",
                y + 11, churn_lifetime_label(i, label, sizeof label), y, w,
                i == CHURN_LIFETIME_NEVER ? "#c0392b" : "#2e86c1", 100 + w, y + 11,
                (unsigned long long)buckets[i]);
    }
    fputs("</svg>\n", out);
}

typedef struct frame_list {
    FILE *out;
    size_t n;
} frame_list;

static void frame_line(void *ctx, const char *frame)
{
    frame_list *l = ctx;
    if (l->n++ == STACK_SHOWN)
        fputs("<details><summary>more frames</summary>", l->out);
    churn_html_escape(l->out, frame);
    fputs("<br>", l->out);
}

static void functions(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    size_t n, left;
    churn_callsite **rows = churn_report_ranked_functions(a, o, &n, &left);
    fputs("<h2>Top functions by retained growth</h2>\n<p>Each row is the sum of the callsites "
          "whose allocating function it is.",
          out);
    if (left)
        fprintf(out, " %zu more neither grow nor hold anything live: --json lists them.", left);
    fputs("</p>\n<table><tr><th>#</th><th>bytes/epoch</th>"
          "<th>objects/epoch</th><th>r2</th><th>live</th><th>allocs</th><th>frees</th>"
          "<th>stacks</th><th>retention</th><th class=\"stack\">function (module)</th></tr>\n",
          out);
    char b1[32], b2[32], b3[32], rate[32], name[1024], file[256], run_as[256];
    int as = n && churn_report_run_as(o, file, run_as, sizeof file);
    for (size_t i = 0; i < n; i++) {
        const churn_callsite *s = rows[i];
        const churn_function *fn = churn_functions_of(&a->functions, s);
        fprintf(out, "<tr><td>%zu</td><td>%s</td><td>%s</td><td>%.2f</td>"
                     "<td>%lld (%s)</td><td>%llu</td><td>%llu</td><td>%zu</td>",
                i + 1, human(churn_fit_slope(&s->bytes_fit), "B", b1, sizeof b1),
                count_rate(churn_fit_slope(&s->count_fit), rate, sizeof rate),
                churn_fit_r2(&s->bytes_fit),
                (long long)s->live_count, human((double)s->live_bytes, "B", b2, sizeof b2),
                (unsigned long long)fn->allocs, (unsigned long long)fn->frees, fn->stacks);
        churn_retained r = churn_report_retention(a, &a->functions.growth, s);
        fprintf(out, "<td>%s", churn_report_retention_words(r.kind));
        if (r.kind == CHURN_RETENTION_KEPT)
            fprintf(out, "<br>%lld (%s) before the teardown", (long long)r.count,
                    human((double)r.bytes, "B", b3, sizeof b3));
        if (r.reclaimed_count)
            fprintf(out, "<br>%lld freed in epoch %llu", (long long)r.reclaimed_count,
                    (unsigned long long)r.reclaimed_epoch);
        enum churn_retention order[CHURN_RETENTION_KINDS];
        size_t nc = churn_functions_classes(fn, 1, order);
        for (size_t k = 0; nc > 1 && k < nc; k++) {
            const struct churn_function_class *c = &fn->classes[order[k]];
            fprintf(out, "<br>%s %lld (%s) in %zu stack%s",
                    churn_report_retention_words(order[k]), (long long)c->count,
                    human((double)c->bytes, "B", b3, sizeof b3), c->stacks,
                    c->stacks == 1 ? "" : "s");
        }
        fputs("</td><td class=\"stack\">", out);
        char module[600];
        if (fn->module && as && !strcmp(fn->module, file))
            snprintf(module, sizeof module, "%s [%s]", run_as, file);
        else
            snprintf(module, sizeof module, "%s", fn->module ? fn->module : "?");
        if (fn->name) { /* a long name gives up its middle, never its module or type */
            char rest[700];
            if (fn->type)
                snprintf(rest, sizeof rest, " (%s), type %s", module, fn->type);
            else
                snprintf(rest, sizeof rest, " (%s)", module);
            churn_frame_fit(name, sizeof name - strlen(rest), fn->name, strlen(fn->name));
            strcat(name, rest);
        } else /* an offset into the file, named as the stacks' frames name it */
            snprintf(name, sizeof name, "%s+0x%llx%s%s%s", fn->module ? fn->module : "?",
                     (unsigned long long)fn->offset, fn->caller ? " (called from " : "",
                     fn->caller ? fn->caller : "", fn->caller ? ")" : "");
        churn_html_escape(out, name);
        if (fn->via) {
            fputs(" via ", out);
            churn_html_escape(out, fn->via);
            if (fn->via_others)
                fputs(" and others", out);
        }
        fputs("</td></tr>\n", out);
    }
    if (!n)
        fputs("<tr><td colspan=\"10\">(none)</td></tr>\n", out);
    fputs("</table>\n", out);
    free(rows);
}

static void callsites(FILE *out, churn_analysis *a, const churn_report_options *o)
{
    size_t n = 0, all;
    churn_callsite **sites = churn_report_callsites(a, 0, &all);
    for (size_t i = 0; i < all && (!o->top || n < o->top); i++) /* as the text report */
        if (!churn_suppressions_of(o->suppress, sites[i]->stack) &&
            churn_report_ranked(a, &a->growth, sites[i]))
            sites[n++] = sites[i];
    churn_frames_source src = {&a->stacks, a->sym};
    fputs("<h2>Top callsites by retained growth</h2>\n<table><tr><th>#</th><th>bytes/epoch</th>"
          "<th>objects/epoch</th><th>r2</th><th>live</th><th>allocs</th><th>frees</th>"
          "<th class=\"stack\">lifetimes, stack (innermost first)</th></tr>\n", out);
    char b1[32], b2[32], rate[32], label[32];
    for (size_t i = 0; i < n; i++) {
        const churn_callsite *s = sites[i];
        fprintf(out, "<tr><td>%zu</td><td>%s</td><td>%s</td><td>%.2f</td>"
                     "<td>%lld (%s)</td><td>%llu</td><td>%llu</td><td class=\"stack\">",
                i + 1, human(churn_fit_slope(&s->bytes_fit), "B", b1, sizeof b1),
                count_rate(churn_fit_slope(&s->count_fit), rate, sizeof rate),
                churn_fit_r2(&s->bytes_fit),
                (long long)s->live_count, human((double)s->live_bytes, "B", b2, sizeof b2),
                (unsigned long long)s->allocs, (unsigned long long)s->frees);
        fputs("<i>", out);
        for (unsigned b = 0; b < CHURN_LIFETIME_BUCKETS; b++)
            if (s->lifetime[b])
                fprintf(out, "%s:%llu ", churn_lifetime_label(b, label, sizeof label),
                        (unsigned long long)s->lifetime[b]);
        fputs("</i><br>", out);
        frame_list l = {out, 0};
        churn_frames_each(&src, s->stack, 0, frame_line, &l);
        fputs(l.n > STACK_SHOWN ? "</details></td></tr>\n" : "</td></tr>\n", out);
    }
    if (!n)
        fputs("<tr><td colspan=\"8\">(none)</td></tr>\n", out);
    fputs("</table>\n", out);
    free(sites);
    for (size_t i = 0; o->suppress && i < o->suppress->count; i++) {
        const churn_suppression *r = &o->suppress->rules[i];
        if (!r->callsites)
            continue;
        fputs("<p>Not ranked, a known allocation that is not a leak: <code>", out);
        churn_html_escape(out, r->rule);
        fprintf(out, "</code>, live %lld objects (%s) in %llu callsite(s): ",
                (long long)r->live_count, human((double)r->live_bytes, "B", b1, sizeof b1),
                (unsigned long long)r->callsites);
        churn_html_escape(out, r->what);
        fputs("</p>\n", out);
    }
}

/* Both graphs draw the same data: one column per metric. */
static void flames(FILE *out, const churn_export_window *w, const churn_tree *tree)
{
    const char **titles = churn_xcalloc(churn_metrics_count, sizeof *titles);
    const char **units = churn_xcalloc(churn_metrics_count, sizeof *units);
    for (unsigned m = 0; m < churn_metrics_count; m++) {
        titles[m] = churn_metrics[m].title;
        units[m] = churn_metrics[m].unit;
    }
    /* The default view: what was live before the teardown, as the rankings use it; the
       live state after an exit's drain is often empty. */
    unsigned live = (unsigned)(churn_metric_find("retained") - churn_metrics);
    unsigned alloc = (unsigned)(churn_metric_find("alloc_bytes") - churn_metrics);
    char window[64];
    churn_window_label(w->a, window, sizeof window);
    churn_flame_desc d = {"What is retained", window, titles, units, live, -1};
    fputs("<h2>Flame graphs</h2>\n<p>Hover a frame for its value and share, click to zoom, "
          "search with a regular expression; colour follows the module.</p>\n"
          "<svg class=\"flame\" id=\"flame-retained\" width=\"100%\"></svg>\n"
          "<p></p><svg class=\"flame\" id=\"flame-churn\" width=\"100%\"></svg>\n<script>\n",
          out);
    churn_flame_script(out);
    fputs("var churnData = ", out);
    churn_flame_data(out, tree, &d);
    fprintf(out, ";\nchurnFlame(document.getElementById('flame-retained'), churnData);\n"
                 "churnFlame(document.getElementById('flame-churn'), Object.assign({}, churnData, "
                 "{title: 'What churns', col: %u}));\n</script>\n",
            alloc);
    free(titles);
    free(units);
}

static void edge_list(FILE *out, const churn_tree *tree, const char *label,
                      const churn_caller_edge *e, size_t n, size_t all)
{
    char b[32];
    fprintf(out, "<b>%s</b> (%zu):<br>", label, all);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%s, %lld allocs: ", human((double)e[i].v[0], "B", b, sizeof b),
                (long long)e[i].v[1]);
        churn_html_escape(out, tree->strings[e[i].name]);
        fputs("<br>", out);
    }
    if (all > n)
        fprintf(out, "... %zu more<br>", all - n);
}

/* Caller/callee view (export/callers.h): retained bytes sort, allocations beside. */
static void callers(FILE *out, const churn_tree *tree, size_t top)
{
    unsigned cols[CHURN_CALLERS_COLS] = {
        (unsigned)(churn_metric_find("retained") - churn_metrics),
        (unsigned)(churn_metric_find("allocs") - churn_metrics)};
    churn_callers c;
    churn_callers_build(&c, tree, cols, top);
    fputs("<h2>Callers and callees</h2>\n<p>Per function, what its own allocations hold "
          "(self) and what passes through it (inclusive), for the bytes live before the "
          "teardown and for the allocations; open a row for the functions that call it and "
          "that it calls, click a column's title to sort by it.</p>\n"
          "<table id=\"callers\"><tr><th>#</th><th>retained self</th>"
          "<th>retained inclusive</th><th>allocs self</th><th>allocs inclusive</th>"
          "<th class=\"stack\">function (module)</th></tr>\n", out);
    char b1[32], b2[32];
    for (size_t i = 0; i < c.count; i++) {
        const churn_callers_row *r = &c.rows[i];
        fprintf(out, "<tr><td data-v=\"%zu\">%zu</td><td data-v=\"%lld\">%s</td>"
                     "<td data-v=\"%lld\">%s</td><td data-v=\"%lld\">%lld</td>"
                     "<td data-v=\"%lld\">%lld</td><td class=\"stack\"><details><summary>",
                i + 1, i + 1, (long long)r->self[0], human((double)r->self[0], "B", b1, sizeof b1),
                (long long)r->incl[0], human((double)r->incl[0], "B", b2, sizeof b2),
                (long long)r->self[1], (long long)r->self[1], (long long)r->incl[1],
                (long long)r->incl[1]);
        churn_html_escape(out, tree->strings[r->name]);
        if (tree->strings[r->module][0]) {
            fputs(" (", out);
            churn_html_escape(out, tree->strings[r->module]);
            fputs(")", out);
        }
        fputs("</summary>", out);
        edge_list(out, tree, "called from", r->callers, r->ncallers, r->all_callers);
        edge_list(out, tree, "calls", r->callees, r->ncallees, r->all_callees);
        fputs("</details></td></tr>\n", out);
    }
    if (!c.count)
        fputs("<tr><td colspan=\"6\">(none)</td></tr>\n", out);
    /* Sorting by a numeric column: largest first (the rank column: smallest first). */
    fputs("</table>\n<script>(function(){var t=document.getElementById('callers');"
          "t.querySelectorAll('th').forEach(function(h,c){if(c>4)return;h.style.cursor='pointer';"
          "h.onclick=function(){var rows=Array.from(t.rows).slice(1);rows.sort(function(a,b){"
          "var x=+a.cells[c].dataset.v,y=+b.cells[c].dataset.v;return c?y-x:x-y});"
          "rows.forEach(function(r){t.tBodies[0].appendChild(r)})}})})();</script>\n", out);
    churn_callers_free(&c);
}

static void warnings(FILE *out, const churn_warnings *w)
{
    if (!w->count)
        return;
    fputs("<h2>Warnings</h2>\n<ul class=\"warn\">\n", out);
    size_t n;
    char **lines = churn_report_folded_warnings(w, &n);
    for (size_t i = 0; i < n; i++) {
        fputs("<li>", out);
        churn_html_escape(out, lines[i]);
        fputs("</li>\n", out);
        free(lines[i]);
    }
    free(lines);
    if (w->suppressed)
        fprintf(out, "<li>%zu more warning(s) not shown</li>\n", w->suppressed);
    fputs("</ul>\n", out);
}

void churn_export_html(FILE *out, const churn_export_window *w, const churn_report_options *o)
{
    churn_analysis *a = w->a;
    churn_trends t =
        churn_trends_compute(&a->epochs, a->growth.window_first, a->growth.window_last);
    churn_report_types(a);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>libchurn: ",
          out);
    churn_html_escape(out, o->trace_path);
    fprintf(out, "</title>\n<style>\n%s</style></head><body>\n", style);
    header(out, a, o);
    verdict(out, a, o);
    summary(out, a, &t);
    static const series charts[] = {
        {"Live bytes at the end of each epoch", "B", live_bytes, live_lo, live_hi, 0},
        {"RSS at the end of each epoch", "B", rss_bytes, rss_lo, rss_hi, 0},
        {"Epoch duration (wall)", "ms", wall_ms, wall_lo, wall_hi, 1},
    };
    fputs("<h2>Over the epochs</h2>\n<div class=\"charts\">\n", out);
    for (size_t i = 0; i < sizeof charts / sizeof charts[0]; i++)
        chart(out, &a->epochs, &charts[i]);
    fputs("</div>\n", out);
    fragmentation(out, a);
    functions(out, a, o);
    callsites(out, a, o);
    lifetimes(out, a->lifetime);
    churn_tree tree;
    churn_tree_init(&tree, (unsigned)churn_metrics_count);
    for (unsigned m = 0; m < churn_metrics_count; m++)
        churn_metric_fill(&churn_metrics[m], w, &tree, m, NULL);
    churn_tree_finish(&tree);
    flames(out, w, &tree);
    callers(out, &tree, o->top);
    churn_tree_free(&tree);
    churn_report_collect_warnings(a);
    warnings(out, a->warn);
    fputs("</body></html>\n", out);
}
