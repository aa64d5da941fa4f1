/* The forms of --diff: text, JSON (schema: docs/analyzer.md, "Two runs side by side") and a
   self-contained page. */
#include <math.h>
#include <stdlib.h>

#include "churn/version.h"
#include "report/diff.h"
#include "base/util.h"

static const char *const part_titles[CHURN_DIFF_PARTS] = {
    "rss", "live", "slack", "pinned", "free-resident", "outside the allocator", "not traced",
};

/* Bytes with a sign ("+3.9KiB", "0B", "-12B"): growth and changes. */
static const char *signed_bytes(double v, char *buf, size_t len)
{
    churn_report_binary(v, "B", buf + 1, len - 1);
    if (v > 0 && buf[1] != '0') {
        buf[0] = '+';
        return buf;
    }
    return buf + 1;
}

static const char *bytes(double v, char *buf, size_t len)
{
    return churn_report_binary(v, "B", buf, len);
}

/* A missing side of a row counts as nothing there. */
static churn_diff_figures change_of(const churn_diff_row *r)
{
    churn_diff_figures c = {0};
    c.bytes_per_epoch = r->new.bytes_per_epoch - r->old.bytes_per_epoch;
    c.live_bytes = r->new.live_bytes - r->old.live_bytes;
    c.live_count = r->new.live_count - r->old.live_count;
    c.allocs = r->new.allocs - r->old.allocs;
    c.alloc_bytes = r->new.alloc_bytes - r->old.alloc_bytes;
    return c;
}

static void run_line(FILE *out, const char *label, const char *path, const churn_analysis *a)
{
    char how[64];
    fprintf(out, "  %s: %s: pid %llu, epochs %llu..%llu, %s\n", label, path,
            (unsigned long long)a->info->pid, (unsigned long long)a->first_epoch,
            (unsigned long long)a->last_epoch, churn_report_exit_text(a, how, sizeof how));
}

void churn_diff_text(FILE *out, const churn_diff *d, size_t top)
{
    char b[6][32];
    fprintf(out, "churn-analyze %s: two runs side by side\n", CHURN_VERSION);
    run_line(out, "old", d->old_path, d->old);
    run_line(out, "new", d->new_path, d->new);
    fputs("\nRSS growth per epoch, by part (least squares over each run's steady window):\n",
          out);
    fprintf(out, "  %-22s %10s %10s %10s\n", "", "old", "new", "change");
    for (int k = 0; k < CHURN_DIFF_PARTS; k++) {
        int o = d->old_parts.known[k], n = d->new_parts.known[k];
        if (!o && !n)
            continue;
        double vo = d->old_parts.per_epoch[k], vn = d->new_parts.per_epoch[k];
        fprintf(out, "  %-22s %10s %10s %10s\n", part_titles[k],
                o ? signed_bytes(vo, b[0], 32) : "-", n ? signed_bytes(vn, b[1], 32) : "-",
                o && n ? signed_bytes(vn - vo, b[2], 32) : "-");
    }
    size_t shown = top && top < d->changed ? top : d->changed;
    fprintf(out,
            "\nFunctions that changed (%zu of %zu; by the change in growth per epoch, then "
            "in live bytes):\n",
            d->changed, d->n);
    if (!d->changed)
        return;
    fprintf(out, "  %-29s  %-29s  %s\n", "growth per epoch", "live bytes at the end",
            "allocations");
    fprintf(out, "  %9s %9s %9s  %9s %9s %9s  %6s %6s  %s\n", "old", "new", "change", "old",
            "new", "change", "old", "new", "function");
    for (size_t i = 0; i < shown; i++) {
        const churn_diff_row *r = &d->rows[i];
        churn_diff_figures c = change_of(r);
        char ao[24], an[24];
        snprintf(ao, sizeof ao, "%llu", (unsigned long long)r->old.allocs);
        snprintf(an, sizeof an, "%llu", (unsigned long long)r->new.allocs);
        fprintf(out, "  %9s %9s %9s  %9s %9s %9s  %6s %6s  %s (%s)\n",
                r->old.present ? signed_bytes(r->old.bytes_per_epoch, b[0], 32) : "-",
                r->new.present ? signed_bytes(r->new.bytes_per_epoch, b[1], 32) : "-",
                signed_bytes(c.bytes_per_epoch, b[2], 32),
                r->old.present ? bytes((double)r->old.live_bytes, b[3], 32) : "-",
                r->new.present ? bytes((double)r->new.live_bytes, b[4], 32) : "-",
                signed_bytes((double)c.live_bytes, b[5], 32), r->old.present ? ao : "-",
                r->new.present ? an : "-", r->function, r->module ? r->module : "?");
    }
    if (shown < d->changed)
        fprintf(out, "  ... %zu more (--top N shows more, --json all)\n", d->changed - shown);
}

/* ---- JSON ---- */

static void json_double(FILE *out, double v)
{
    fprintf(out, "%.10g", isfinite(v) ? v : 0.0);
}

static void json_run(FILE *out, const char *path, const churn_analysis *a)
{
    fputs("{\"trace\": ", out);
    churn_report_json_string(out, path);
    fprintf(out, ", \"pid\": %llu, \"first_epoch\": %llu, \"last_epoch\": %llu, \"exit\": ",
            (unsigned long long)a->info->pid, (unsigned long long)a->first_epoch,
            (unsigned long long)a->last_epoch);
    churn_report_json_string(out, churn_report_exit_how(a));
    fputs("}", out);
}

static void json_part(FILE *out, int known, double v)
{
    if (known)
        json_double(out, v);
    else
        fputs("null", out);
}

static void json_figures(FILE *out, const churn_diff_figures *f, int retention)
{
    fputs("{\"bytes_per_epoch\": ", out);
    json_double(out, f->bytes_per_epoch);
    fprintf(out,
            ", \"live_bytes\": %lld, \"live_count\": %lld, \"allocs\": %lld, "
            "\"alloc_bytes\": %lld",
            (long long)f->live_bytes, (long long)f->live_count, (long long)f->allocs,
            (long long)f->alloc_bytes);
    if (retention)
        fprintf(out, ", \"retention\": \"%s\"", churn_retention_name(f->retention));
    fputs("}", out);
}

void churn_diff_json(FILE *out, const churn_diff *d)
{
    fputs("{\"old\": ", out);
    json_run(out, d->old_path, d->old);
    fputs(",\n\"new\": ", out);
    json_run(out, d->new_path, d->new);
    fputs(",\n\"rss_per_epoch\": {", out);
    for (int k = 0; k < CHURN_DIFF_PARTS; k++) {
        int o = d->old_parts.known[k], n = d->new_parts.known[k];
        double vo = d->old_parts.per_epoch[k], vn = d->new_parts.per_epoch[k];
        fprintf(out, "%s\"%s\": {\"old\": ", k ? ", " : "", churn_diff_part_name(k));
        json_part(out, o, vo);
        fputs(", \"new\": ", out);
        json_part(out, n, vn);
        fputs(", \"change\": ", out);
        json_part(out, o && n, vn - vo);
        fputs("}", out);
    }
    fprintf(out, "},\n\"changed_functions\": %zu,\n\"functions\": [", d->changed);
    for (size_t i = 0; i < d->n; i++) {
        const churn_diff_row *r = &d->rows[i];
        fputs(i ? ",\n  {\"function\": " : "\n  {\"function\": ", out);
        churn_report_json_string(out, r->function);
        fputs(", \"module\": ", out);
        if (r->module)
            churn_report_json_string(out, r->module);
        else
            fputs("null", out);
        fputs(", \"old\": ", out);
        if (r->old.present)
            json_figures(out, &r->old, 1);
        else
            fputs("null", out);
        fputs(", \"new\": ", out);
        if (r->new.present)
            json_figures(out, &r->new, 1);
        else
            fputs("null", out);
        fputs(", \"change\": ", out);
        churn_diff_figures c = change_of(r);
        json_figures(out, &c, 0);
        fputs("}", out);
    }
    fputs("]}\n", out);
}

/* ---- the page ---- */

static const char page_style[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1240px;padding:0 16px "
    "40px;"
    "color:#1d1d1f;background:#fafaf7}\n"
    "h1{font-size:22px;margin:18px 0 2px}h2{font-size:17px;margin:28px 0 8px;"
    "border-bottom:1px solid #ddd;padding-bottom:4px}.meta{color:#555;font-size:13px}\n"
    "table{border-collapse:collapse;width:100%;background:#fff}th,td{border-bottom:1px solid "
    "#e4e4e4;padding:4px 6px;text-align:right}th{background:#f0f0ec}\n"
    "td.name,th.name{text-align:left}td.name{font:12px/1.35 ui-monospace,monospace;"
    "overflow-wrap:anywhere}\n"
    "td.less{color:#1a7f37}td.more{color:#b42318}\n";

/* A change cell: green when it went down, red when up. */
static void change_cell(FILE *out, double v, const char *text)
{
    fprintf(out, "<td class=\"%s\">", v < 0 ? "less" : v > 0 ? "more" : "same");
    churn_html_escape(out, text);
    fputs("</td>", out);
}

static void cell(FILE *out, const char *text)
{
    fputs("<td>", out);
    churn_html_escape(out, text);
    fputs("</td>", out);
}

static void html_run(FILE *out, const char *label, const char *path, const churn_analysis *a)
{
    char how[64];
    fprintf(out, "<div class=\"meta\">%s: ", label);
    churn_html_escape(out, path);
    fprintf(out, ": pid %llu, epochs %llu..%llu, ", (unsigned long long)a->info->pid,
            (unsigned long long)a->first_epoch, (unsigned long long)a->last_epoch);
    churn_html_escape(out, churn_report_exit_text(a, how, sizeof how));
    fputs("</div>\n", out);
}

void churn_diff_html(FILE *out, const churn_diff *d, size_t top)
{
    char b[32];
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<title>libchurn: ",
          out);
    churn_html_escape(out, d->old_path);
    fputs(" against ", out);
    churn_html_escape(out, d->new_path);
    fprintf(out,
            "</title>\n<style>\n%s</style></head><body>\n<h1>libchurn: two runs side by "
            "side</h1>\n",
            page_style);
    html_run(out, "old", d->old_path, d->old);
    html_run(out, "new", d->new_path, d->new);
    fputs("<h2>RSS growth per epoch, by part</h2>\n<table class=\"parts\"><tr><th></th>"
          "<th>old</th><th>new</th><th>change</th></tr>\n",
          out);
    for (int k = 0; k < CHURN_DIFF_PARTS; k++) {
        int o = d->old_parts.known[k], n = d->new_parts.known[k];
        if (!o && !n)
            continue;
        double vo = d->old_parts.per_epoch[k], vn = d->new_parts.per_epoch[k];
        fprintf(out, "<tr><td class=\"name\">%s</td>", part_titles[k]);
        cell(out, o ? signed_bytes(vo, b, sizeof b) : "-");
        cell(out, n ? signed_bytes(vn, b, sizeof b) : "-");
        change_cell(out, o && n ? vn - vo : 0,
                    o && n ? signed_bytes(vn - vo, b, sizeof b) : "-");
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
    size_t shown = top && top < d->changed ? top : d->changed;
    fprintf(out,
            "<h2>Functions that changed (%zu of %zu)</h2>\n<table class=\"functions\">"
            "<tr><th>growth/epoch old</th><th>new</th><th>change</th><th>live bytes "
            "old</th><th>new</th><th>change</th><th>allocations old</th><th>new</th>"
            "<th class=\"name\">function</th></tr>\n",
            d->changed, d->n);
    for (size_t i = 0; i < shown; i++) {
        const churn_diff_row *r = &d->rows[i];
        churn_diff_figures c = change_of(r);
        fputs("<tr>", out);
        cell(out, r->old.present ? signed_bytes(r->old.bytes_per_epoch, b, sizeof b) : "-");
        cell(out, r->new.present ? signed_bytes(r->new.bytes_per_epoch, b, sizeof b) : "-");
        change_cell(out, c.bytes_per_epoch, signed_bytes(c.bytes_per_epoch, b, sizeof b));
        cell(out, r->old.present ? bytes((double)r->old.live_bytes, b, sizeof b) : "-");
        cell(out, r->new.present ? bytes((double)r->new.live_bytes, b, sizeof b) : "-");
        change_cell(out, (double)c.live_bytes, signed_bytes((double)c.live_bytes, b, sizeof b));
        snprintf(b, sizeof b, "%llu", (unsigned long long)r->old.allocs);
        cell(out, r->old.present ? b : "-");
        snprintf(b, sizeof b, "%llu", (unsigned long long)r->new.allocs);
        cell(out, r->new.present ? b : "-");
        fputs("<td class=\"name\">", out);
        churn_html_escape(out, r->function);
        fputs(" (", out);
        churn_html_escape(out, r->module ? r->module : "?");
        fputs(")</td></tr>\n", out);
    }
    fputs("</table>\n", out);
    if (shown < d->changed)
        fprintf(out,
                "<p class=\"meta\">%zu more: churn-analyze --json --diff lists them "
                "all</p>\n",
                d->changed - shown);
    fputs("</body></html>\n", out);
}
