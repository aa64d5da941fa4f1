/*
 * churn-analyze: reads a libchurn trace and reports which callsites grow per epoch.
 * This file is the command line only; the work is in reader, analysis and report_*.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "pipeline.h"
#include "progress.h"
#include "reader.h"
#include "report.h"

#define TEXT_TOP_DEFAULT 10

static void usage(FILE *out)
{
    fputs("usage: churn-analyze [--json] [--epochs A:B] [--top N] TRACE\n"
          "  --json        one JSON object on stdout (schema: docs/analyzer.md)\n"
          "  --epochs A:B  only epochs A..B inclusive; either end may be left empty\n"
          "  --top N       callsites shown (text default 10, JSON default all)\n",
          out);
}

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "churn-analyze: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    usage(stderr);
    return 2;
}

/* An epoch bound: digits only, empty meaning "open". */
static int parse_bound(const char *s, size_t len, int *has, uint64_t *out)
{
    *has = len > 0;
    if (!len)
        return 0;
    char buf[32];
    if (len >= sizeof buf || strspn(s, "0123456789") < len)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    *out = strtoull(buf, NULL, 10);
    return errno ? -1 : 0;
}

static int parse_window(const char *arg, churn_window *w)
{
    const char *colon = strchr(arg, ':');
    if (!colon)
        return -1;
    if (parse_bound(arg, (size_t)(colon - arg), &w->has_first, &w->first) != 0 ||
        parse_bound(colon + 1, strlen(colon + 1), &w->has_last, &w->last) != 0)
        return -1;
    return w->has_first && w->has_last && w->first > w->last ? -1 : 0;
}

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

static int analyze(const char *path, int json, churn_window window, size_t top)
{
    churn_warnings warnings = {0};
    char err[256];
    churn_trace *t = churn_trace_open(path, &warnings, err, sizeof err);
    if (!t) {
        fprintf(stderr, "churn-analyze: %s: %s\n", path, err);
        churn_warnings_free(&warnings);
        return 1;
    }
    churn_symbolizer *sym = churn_symbolizer_new();
    churn_analysis a;
    churn_analysis_init(&a, churn_trace_info_of(t), window,
                        churn_trace_segment(t, 0)->first_epoch, &warnings, sym);
    churn_progress progress;
    churn_progress_init(&progress, !json);
    churn_live_pass live;
    churn_live_pass_init(&live, window.has_last, window.last);
    run r = {t, &a, &progress};
    churn_pipeline_run(t, &warnings, churn_analysis_record, &a, segment_edge, &r, &live);
    churn_progress_done(&progress);
    churn_analysis_finish(&a, &live);
    churn_live_pass_free(&live);

    churn_report_options opts = {path, top};
    if (json)
        churn_report_json(stdout, &a, &opts);
    else
        churn_report_text(stdout, &a, &opts);

    churn_analysis_free(&a);
    churn_symbolizer_free(sym);
    churn_trace_close(t);
    churn_warnings_free(&warnings);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "churn-analyze: writing the report failed: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"epochs", required_argument, NULL, 'e'},
        {"top", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, has_top = 0;
    size_t top = 0;
    churn_window window = {0};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = 1;
            break;
        case 'e':
            if (parse_window(optarg, &window) != 0)
                return usage_error("--epochs wants A:B with A <= B (either may be empty)",
                                   optarg);
            break;
        case 't': {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (errno || *end || end == optarg || optarg[0] == '-')
                return usage_error("--top wants a number", optarg);
            top = (size_t)v;
            has_top = 1;
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        default:
            return usage_error("unknown or incomplete option", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return usage_error(optind == argc ? "no trace file given" : "only one trace file",
                           NULL);
    if (!has_top)
        top = json ? 0 : TEXT_TOP_DEFAULT;
    return analyze(argv[optind], json, window, top);
}
