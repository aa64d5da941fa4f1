/*
 * churn-analyze's command line as data: --help prints it (main.c) and the man page
 * churn-analyze.1 is generated from it (cli/docgen.c), so the two cannot differ.  A help text
 * breaks its lines at '\n' in --help and is one paragraph in the man page.
 */
#ifndef CHURN_ANALYZE_USAGE_H
#define CHURN_ANALYZE_USAGE_H

typedef struct churn_usage_option {
    const char *flag;
    const char *help;
} churn_usage_option;

/* The synopsis, one line per element, after "churn-analyze ". */
static const char *const churn_analyze_synopsis[] = {
    "[--json | --folded[=METRIC] | --svg[=METRIC] | --html | --pprof]",
    "[--epochs A:B] [--all-epochs] [--base A:B] [--freed A:B] [--model NAME]",
    "[--top N] [--script-functions]",
    "[--suppressions FILE]... [--no-default-suppressions] [-o FILE]",
    "[--tree | --diff OLD] TRACE | -",
};

static const churn_usage_option churn_analyze_options[] = {
    {"--json", "one JSON object (schema: docs/analyzer.md)"},
    {"--folded[=METRIC]", "collapsed stacks for flame graph tools (docs/flamegraphs.md)"},
    {"--svg[=METRIC]", "an interactive flame graph, one self-contained SVG file"},
    {"--html", "a self-contained review page: summary, charts, flame graphs"},
    {"--pprof", "a gzipped pprof profile (allocations, bytes, live bytes)"},
    {"--epochs A:B", "only epochs A..B inclusive, slopes and rankings too (instead of\n"
                     "the steady window); either end may be left empty"},
    {"--all-epochs", "every epoch: slopes and rankings over the whole run, and one row\n"
                     "per epoch in the epochs table, however many (more than 4096\n"
                     "epochs are otherwise merged into buckets: docs/analyzer.md)"},
    {"--base A:B", "with --folded or --svg: compare with window A:B (differential)"},
    {"--freed A:B", "rank functions and callsites by what was freed in epochs A..B\n"
                    "(a collection, a flush), with the epochs it was allocated in"},
    {"--model NAME", "allocator model for the fragmentation estimate, instead of the\n"
                     "trace's: none, page[:BYTES], glibc, gperftools, tcmalloc,\n"
                     "jemalloc[:PAGE] (docs/fragmentation.md)"},
    {"--top N", "callsites shown (text default 10, HTML 20, JSON all)"},
    {"--script-functions", "rank functions by the innermost JavaScript or Python function of\n"
                           "each stack (named from the runtime's perf map: docs/runtimes.md)\n"
                           "instead of the innermost native one"},
    {"--suppressions FILE", "known allocations to keep out of the callsite ranking, one\n"
                            "leak:PATTERN or init:MODULE-PATTERN per line, added to the\n"
                            "built-in list of start-up allocations (docs/analyzer.md)"},
    {"--no-default-suppressions", "without the built-in list of --suppressions"},
    {"--tree", "every process image of the tree whose index (NAME.index) is beside\n"
               "TRACE, or is TRACE: a summary (each image's end, allocations, peak,\n"
               "live at exit, growth; totals; which allocated and grew most), then\n"
               "each image's report (text: the top 3 rows unless --top); text or --json"},
    {"--diff OLD", "two runs side by side, TRACE against OLD (before and after a fix):\n"
                   "the functions whose growth, live bytes or allocations changed,\n"
                   "and the parts of RSS growth per epoch; text, --json, --html or\n"
                   "--folded (docs/analyzer.md)"},
    {"-o FILE", "write to FILE instead of stdout"},
    {"-", "read the trace from standard input instead of the file TRACE"},
    {"--version", "print the version and exit"},
    {"--help", "print this help and exit"},
};

/* What METRIC may be. */
static const char churn_analyze_metrics[] =
    "alloc_bytes, allocs, live_bytes (default), live_count, retained, growth,\nleaked, pinned";

#endif
