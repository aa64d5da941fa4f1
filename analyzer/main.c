/*
 * churn-analyze: reads a libchurn trace and reports which callsites grow per epoch.
 * This file is the command line only; the work is in reader, pipeline, analysis, report_*
 * and export_*.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/analysis.h"
#include "base/progress.h"
#include "base/util.h"
#include "churn/version.h"
#include "export/folded.h"
#include "export/metrics.h"
#include "export/pprof.h"
#include "export/svg.h"
#include "read/reader.h"
#include "report/diff.h"
#include "report/html.h"
#include "report/proctree.h"
#include "report/report.h"
#include "report/session.h"
#include "usage.h"

#define TEXT_TOP_DEFAULT 10
#define HTML_TOP_DEFAULT 20
#define TREE_TOP_DEFAULT 3 /* rows of each table in a process's section of --tree */
#define METRIC_DEFAULT "live_bytes"

typedef enum output_form {
    FORM_TEXT, FORM_JSON, FORM_FOLDED, FORM_SVG, FORM_HTML, FORM_PPROF
} output_form;

typedef struct options {
    output_form form;
    const churn_metric *metric; /* --folded, --svg */
    churn_window window, base, freed;
    int has_base, has_freed;
    const char *model;  /* --model; NULL = the trace's allocator */
    size_t top;
    const char *output; /* -o; NULL = stdout */
    churn_suppressions suppress; /* the built-in list unless --no-default-suppressions, and
                                    --suppressions files */
    int no_default_suppressions;
    int tree; /* --tree: every process image of the index */
    int all_epochs; /* --all-epochs: one epoch per row, however many */
    int script_functions;     /* --script-functions: functions by their script frame */
    const char *diff_old;     /* --diff OLD: the trace given last is compared with it */
    churn_progress *progress; /* on stderr, from the command's start */
} options;

static void usage(FILE *out)
{
    const size_t n_syn = sizeof churn_analyze_synopsis / sizeof churn_analyze_synopsis[0];
    for (size_t i = 0; i < n_syn; i++)
        fprintf(out, "%s%s\n", i ? "                     " : "usage: churn-analyze ",
                churn_analyze_synopsis[i]);
    const size_t n_opt = sizeof churn_analyze_options / sizeof churn_analyze_options[0];
    for (size_t i = 0; i < n_opt; i++) {
        const char *h = churn_analyze_options[i].help;
        const char *flag = churn_analyze_options[i].flag;
        if (strlen(flag) > 18) /* a long flag gets its help on the next line */
            fprintf(out, "  %s\n%21s", flag, "");
        else
            fprintf(out, "  %-18s ", flag);
        for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
            fprintf(out, "%.*s\n%21s", (int)(nl - h), h, "");
        fprintf(out, "%s\n", h);
    }
    const char *m = churn_analyze_metrics;
    fputs("  METRIC: ", out);
    for (const char *nl; (nl = strchr(m, '\n')); m = nl + 1)
        fprintf(out, "%.*s\n%10s", (int)(nl - m), m, "");
    fprintf(out, "%s\n", m);
}

/* One line, as every bad input gets; the option list is --help's, not the error's. */
static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "churn-analyze: %s%s%s (churn-analyze --help lists the options)\n", msg,
            arg ? ": " : "", arg ? arg : "");
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
    w->named = 1;
    return w->has_first && w->has_last && w->first > w->last ? -1 : 0;
}

/* The pinning ranking at the epoch of the most pinned bytes (the teardown left out), when
   that is not the epoch the main ranking is taken at: one more pass, whose window ends there.
   Growing programs peak at the end, and pay nothing. */
static void pinning_at_peak(churn_trace *t, churn_window window, const churn_model *model,
                            int model_from_option, churn_symbolizer *sym,
                            churn_progress *progress, const char *who, churn_analysis *a)
{
    churn_fragmentation *f = &a->frag;
    if (!f->nrows)
        return;
    uint64_t ranked = f->has_before ? f->before_epoch : f->snaps[f->nrows - 1].epoch;
    uint64_t peak = churn_fragment_peak_epoch(f, a->growth.window_last);
    if (peak == UINT64_MAX || peak == ranked)
        return;
    window.has_last = 1;
    window.last = peak;
    churn_progress_pass(progress, "%sreading segments up to epoch %llu, the most pinned", who,
                        (unsigned long long)peak);
    churn_warnings warnings = {0};
    churn_analysis at_peak;
    churn_analyze_window(t, window, model, model_from_option, &warnings, sym, progress,
                         &at_peak, NULL, NULL, 0);
    churn_fragment_take_peak(f, &at_peak.frag);
    churn_analysis_free(&at_peak);
    churn_warnings_free(&warnings);
}

/* --folded and --svg: one metric, and with --base the same metric of the base window. */
static void flame(FILE *out, const options *o, churn_export_window *w, churn_export_window *base)
{
    churn_tree tree;
    churn_tree_init(&tree, base ? 2 : 1);
    churn_progress_pass(o->progress, "symbolizing stacks");
    churn_metric_fill(o->metric, w, &tree, 0, o->progress);
    if (base) {
        churn_progress_pass(o->progress, "symbolizing the stacks of %s",
                            o->diff_old ? "the old run" : "--base");
        churn_metric_fill(o->metric, base, &tree, 1, o->progress);
    }
    churn_progress_done(o->progress);
    churn_tree_finish(&tree);
    if (o->form == FORM_FOLDED) {
        static const unsigned one[] = {0}, diff[] = {1, 0};
        char note[256]; /* the format has no room for it: said beside it */
        if (churn_analysis_estimate_note(w->a, note, sizeof note))
            fprintf(stderr, "churn-analyze: note: the folded figures are %s\n", note);
        churn_export_folded(out, &tree, base ? diff : one, base ? 2 : 1);
    } else {
        churn_svg_view view = {o->metric, w->a, base ? base->a : NULL};
        churn_export_svg(out, &tree, &view);
    }
    churn_tree_free(&tree);
}

static int write_report(FILE *out, options *o, const char *path, churn_analysis *a,
                        churn_export_window *ew, churn_export_window *base)
{
    churn_report_options ropts = {path, o->top, NULL};
    if (o->form == FORM_TEXT || o->form == FORM_JSON || o->form == FORM_HTML) {
        churn_frames_source src = {&a->stacks, a->sym};
        churn_suppressions_apply(&o->suppress, &a->growth, &src);
        ropts.suppress = &o->suppress;
    }
    switch (o->form) {
    case FORM_TEXT:
        churn_report_text(out, a, &ropts);
        return 0;
    case FORM_JSON:
        churn_report_json(out, a, &ropts);
        return 0;
    case FORM_FOLDED:
    case FORM_SVG:
        flame(out, o, ew, base);
        return 0;
    case FORM_HTML:
        churn_export_html(out, ew, &ropts);
        return 0;
    case FORM_PPROF:
        return churn_export_pprof(out, ew);
    }
    return 0;
}

/* "-": the trace comes on standard input.  The reader maps its file and reads it out of
   order (segments are found by scanning, then taken in sequence order), so standard input is
   copied to a temporary file first; the caller removes it as soon as it is open. */
static int spool_stdin(char *path, size_t size, churn_progress *progress)
{
    if (isatty(STDIN_FILENO)) {
        fprintf(stderr, "churn-analyze: -: standard input is a terminal, not a trace\n");
        return -1;
    }
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    snprintf(path, size, "%s/churn-analyze-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, "churn-analyze: -: cannot create a temporary file in %s: %s\n", dir,
                strerror(errno));
        return -1;
    }
    char buf[1 << 16];
    churn_progress_pass(progress, "reading standard input");
    for (size_t got = 0;; churn_progress_bytes(progress, got)) {
        ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            churn_progress_done(progress);
            fprintf(stderr, "churn-analyze: -: reading standard input: %s\n", strerror(errno));
            break;
        }
        if (n == 0) {
            if (close(fd) == 0)
                return 0;
            churn_progress_done(progress);
            fprintf(stderr, "churn-analyze: -: writing %s: %s\n", path, strerror(errno));
            unlink(path);
            return -1;
        }
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(fd, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                churn_progress_done(progress);
                fprintf(stderr, "churn-analyze: -: writing %s: %s\n", path,
                        w < 0 ? strerror(errno) : "no progress");
                close(fd);
                unlink(path);
                return -1;
            }
            off += w;
        }
        got += (size_t)n;
    }
    close(fd);
    unlink(path);
    return -1;
}

/* One trace, open and analyzed. */
typedef struct run {
    churn_trace *t;
    churn_model model;
    int model_from_option;
    churn_symbolizer *sym;
    churn_warnings warnings;
    churn_analysis a;
    churn_export_window ew; /* when exporting */
    int exporting;
} run;

/* Opens path ("-": standard input) and its allocator model: 0, or the exit status after a
   line on stderr (and in fig). */
static int run_open(run *r, const char *path, options *o, churn_proc_figures *fig)
{
    memset(r, 0, sizeof *r);
    char err[256];
    char spooled[4096];
    int from_stdin = !strcmp(path, "-");
    if (from_stdin && spool_stdin(spooled, sizeof spooled, o->progress) != 0)
        return 1;
    r->t = churn_trace_open(from_stdin ? spooled : path, &r->warnings, err, sizeof err);
    if (from_stdin)
        unlink(spooled); /* mapped by now, or not needed */
    churn_progress_done(o->progress);
    if (!r->t) {
        fprintf(stderr, "churn-analyze: %s: %s\n", path, err);
        if (fig)
            snprintf(fig->error, sizeof fig->error, "%s", err);
        churn_warnings_free(&r->warnings);
        return 1;
    }
    if (!churn_fragment_model(r->t, o->model, &r->model, &r->model_from_option, err,
                              sizeof err)) {
        fprintf(stderr, "churn-analyze: %s\n", err);
        churn_trace_close(r->t);
        churn_warnings_free(&r->warnings);
        return 2;
    }
    r->sym = churn_symbolizer_new();
    r->exporting = o->form != FORM_TEXT && o->form != FORM_JSON;
    return 0;
}

/* The CHURN_WINDOW_* flags the options ask for. */
static int window_how(const options *o)
{
    return (o->all_epochs ? CHURN_WINDOW_ALL_EPOCHS : 0) |
           (o->script_functions ? CHURN_WINDOW_SCRIPT_FUNCTIONS : 0);
}

/* The report's window of an open run (who: "" or which run, for the progress line). */
static void run_window(run *r, options *o, const char *who)
{
    churn_progress_pass(o->progress, "%sreading segments", who);
    churn_analyze_steady(r->t, o->window, &r->model, r->model_from_option, &r->warnings, r->sym,
                         o->progress, &r->a, r->exporting ? &r->ew : NULL,
                         o->has_freed ? &o->freed : NULL, window_how(o));
    if (!r->exporting || o->form == FORM_HTML)
        pinning_at_peak(r->t, o->window, &r->model, r->model_from_option, r->sym, o->progress,
                        who, &r->a);
}

/* The report's window again, fitted over fit (--diff: the window both runs share). */
static void run_refit(run *r, options *o, const char *who, const churn_steady *fit)
{
    churn_progress_pass(o->progress, "%sreading segments", who);
    churn_analyze_refit(r->t, o->window, fit, &r->model, r->model_from_option, r->sym,
                        o->progress, &r->a, r->exporting ? &r->ew : NULL,
                        o->has_freed ? &o->freed : NULL, window_how(o));
    if (!r->exporting || o->form == FORM_HTML)
        pinning_at_peak(r->t, o->window, &r->model, r->model_from_option, r->sym, o->progress,
                        who, &r->a);
}

static void run_close(run *r)
{
    if (r->exporting)
        churn_export_window_free(&r->ew);
    churn_analysis_free(&r->a);
    churn_symbolizer_free(r->sym);
    churn_trace_close(r->t);
    churn_warnings_free(&r->warnings);
}

/* -o FILE or stdout; NULL after a line. */
static FILE *open_output(const options *o)
{
    FILE *out = o->output ? fopen(o->output, "wb") : stdout;
    if (!out)
        fprintf(stderr, "churn-analyze: %s: %s\n", o->output, strerror(errno));
    return out;
}

/* Flushes and closes out (stdout is only flushed); 0, or 1 after a line. */
static int close_output(FILE *out, const options *o, int status)
{
    int failed = fflush(out) != 0 || ferror(out);
    if ((out != stdout && fclose(out) != 0) || failed || status != 0) {
        fprintf(stderr, "churn-analyze: writing %s failed: %s\n",
                o->output ? o->output : "the report", strerror(errno ? errno : EIO));
        return 1;
    }
    return 0;
}

/* One trace's report, into o->output (or stdout), or with into, there (the caller checks
   the writes); with fig, the figures of the tree's summary too; who names the image on the
   progress line. */
static int analyze(const char *path, options *o, FILE *into, churn_proc_figures *fig,
                   const char *who)
{
    run r;
    int status = run_open(&r, path, o, fig);
    if (status)
        return status;
    FILE *out = into ? into : open_output(o);
    if (!out) {
        run_close(&r);
        return 1;
    }
    churn_analysis base;
    churn_export_window base_ew;
    churn_warnings base_warnings = {0};
    if (o->has_base) {
        churn_progress_pass(o->progress, "%sreading segments for --base", who);
        churn_analyze_window(r.t, o->base, &r.model, r.model_from_option, &base_warnings, r.sym,
                             o->progress, &base, &base_ew, NULL, 0);
    }
    run_window(&r, o, who);
    churn_progress_done(o->progress);

    status = write_report(out, o, path, &r.a, r.exporting ? &r.ew : NULL,
                          o->has_base ? &base_ew : NULL);
    if (fig)
        churn_proc_figures_of(&r.a, fig);
    if (o->has_base) {
        churn_export_window_free(&base_ew);
        churn_analysis_free(&base);
    }
    run_close(&r);
    churn_warnings_free(&base_warnings);
    return into ? status : close_output(out, o, status);
}

/* --diff OLD NEW: each run analyzed as its report would be, then side by side (diff.h);
   --folded prints OLD's value of each stack, then NEW's, as --base does. */
static int analyze_diff(const char *old_path, const char *new_path, options *o)
{
    run old, new;
    int status = run_open(&old, old_path, o, NULL);
    if (status)
        return status;
    if ((status = run_open(&new, new_path, o, NULL))) {
        run_close(&old);
        return status;
    }
    FILE *out = open_output(o);
    if (out) {
        run_window(&old, o, "old run: ");
        run_window(&new, o, "new run: ");
        churn_steady common; /* one window: what the change did not touch compares equal */
        if (churn_steady_common(&old.a.steady, &new.a.steady, &common)) {
            run_refit(&old, o, "old run: ", &common);
            run_refit(&new, o, "new run: ", &common);
        }
        churn_progress_done(o->progress);
        if (o->form == FORM_FOLDED) {
            flame(out, o, &new.ew, &old.ew);
        } else {
            churn_diff d;
            churn_diff_build(&d, old_path, &old.a, new_path, &new.a, &o->suppress);
            if (o->form == FORM_JSON)
                churn_diff_json(out, &d);
            else if (o->form == FORM_HTML)
                churn_diff_html(out, &d, o->top);
            else
                churn_diff_text(out, &d, o->top);
            churn_diff_free(&d);
        }
        status = close_output(out, o, 0);
    } else {
        status = 1;
    }
    run_close(&new);
    run_close(&old);
    return status;
}

/* --tree: every image of the tree the index beside arg lists (arg may be the index), each
   analyzed alone; the combined summary leads the text (the sections are kept in memory
   until it is known) and follows the processes in JSON. */
static int analyze_tree(const char *arg, options *o)
{
    char *index = churn_proctree_index_of(arg);
    churn_proctree t;
    if (churn_proctree_load(index, &t) != 0) {
        fprintf(stderr, "churn-analyze: %s: no process tree index %s (a traced tree writes "
                        "it beside its first trace)\n", arg, index);
        free(index);
        return 1;
    }
    FILE *out = stdout;
    if (o->output && !(out = fopen(o->output, "wb"))) {
        fprintf(stderr, "churn-analyze: %s: %s\n", o->output, strerror(errno));
        churn_proctree_free(&t);
        free(index);
        return 1;
    }
    churn_proctree_take_exits(&t);
    churn_proc_figures *f = churn_xcalloc(t.n, sizeof *f);
    size_t read = 0;
    int usage = 0; /* a bad --model: every image would say it */
    if (o->form == FORM_JSON) {
        fputs("{\"processes\": [", out);
        for (size_t i = 0; i < t.n; i++) {
            fputs(i ? ",\n{" : "\n{", out);
            churn_proctree_json_proc(out, &t, &t.v[i]);
            fputs(", \"report\": ", out);
            char who[64];
            snprintf(who, sizeof who, "pid %ld: ", t.v[i].pid);
            int s = analyze(t.v[i].trace, o, out, &f[i], who);
            if (s)
                fputs("null", out);
            usage = usage || s == 2;
            read += s == 0;
            fputc('}', out);
        }
        fputs("\n], \"summary\": ", out);
        churn_proctree_json(out, index, &t, f);
        fputs("}\n", out);
    } else {
        char *text = NULL;
        size_t len = 0;
        FILE *sections = open_memstream(&text, &len);
        if (!sections) {
            fprintf(stderr, "churn-analyze: out of memory\n");
            exit(1);
        }
        for (size_t i = 0; i < t.n; i++) {
            const churn_proc *p = &t.v[i];
            char end[48], pid[48];
            snprintf(pid, sizeof pid, p->n ? "%ld.%d" : "%ld", p->pid, p->n);
            fprintf(sections, "\n==== pid %s (parent %ld, %s): ", pid, p->ppid,
                    churn_proc_end(&t, p, end, sizeof end));
            churn_proc_command(sections, p->command, 4096);
            fputc('\n', sections);
            char who[64];
            snprintf(who, sizeof who, "pid %s: ", pid);
            int s = analyze(p->trace, o, sections, &f[i], who);
            if (s)
                fprintf(sections, "  the trace could not be read: %s\n", f[i].error);
            else if (o->top)
                fprintf(sections, "  (the top %zu rows of each table; the whole report: "
                                  "churn-analyze %s)\n", o->top, p->trace);
            usage = usage || s == 2;
            read += s == 0;
        }
        if (fclose(sections) != 0) {
            fprintf(stderr, "churn-analyze: out of memory\n");
            exit(1);
        }
        churn_proctree_text(out, index, &t, f);
        fwrite(text, 1, len, out);
        free(text);
    }
    free(f);
    churn_proctree_free(&t);
    free(index);
    int failed = fflush(out) != 0 || ferror(out);
    if ((out != stdout && fclose(out) != 0) || failed) {
        fprintf(stderr, "churn-analyze: writing %s failed: %s\n",
                o->output ? o->output : "the report", strerror(errno ? errno : EIO));
        return 1;
    }
    /* An image whose trace could not be read is in the summary and on stderr; the rest of
       the tree is still worth its report. */
    return usage ? 2 : read ? 0 : 1;
}

static int set_form(options *o, output_form form, const char *metric)
{
    if (o->form != FORM_TEXT && o->form != form)
        return -1;
    o->form = form;
    if (form == FORM_FOLDED || form == FORM_SVG)
        o->metric = churn_metric_find(metric ? metric : METRIC_DEFAULT);
    return 0;
}

int main(int argc, char **argv)
{
    enum {
        OPT_FOLDED = 256,
        OPT_SVG,
        OPT_HTML,
        OPT_PPROF,
        OPT_BASE,
        OPT_MODEL,
        OPT_FREED,
        OPT_SUPPRESS,
        OPT_NO_DEFAULT_SUPPRESS,
        OPT_TREE,
        OPT_ALL_EPOCHS,
        OPT_DIFF,
        OPT_SCRIPT_FUNCTIONS
    };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"folded", optional_argument, NULL, OPT_FOLDED},
        {"svg", optional_argument, NULL, OPT_SVG},
        {"html", no_argument, NULL, OPT_HTML},
        {"pprof", no_argument, NULL, OPT_PPROF},
        {"epochs", required_argument, NULL, 'e'},
        {"all-epochs", no_argument, NULL, OPT_ALL_EPOCHS},
        {"script-functions", no_argument, NULL, OPT_SCRIPT_FUNCTIONS},
        {"base", required_argument, NULL, OPT_BASE},
        {"freed", required_argument, NULL, OPT_FREED},
        {"model", required_argument, NULL, OPT_MODEL},
        {"top", required_argument, NULL, 't'},
        {"suppressions", required_argument, NULL, OPT_SUPPRESS},
        {"no-default-suppressions", no_argument, NULL, OPT_NO_DEFAULT_SUPPRESS},
        {"tree", no_argument, NULL, OPT_TREE},
        {"diff", required_argument, NULL, OPT_DIFF},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    churn_progress progress;
    churn_progress_init(&progress, 1);
    options o = {0};
    o.progress = &progress;
    int has_top = 0;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
        output_form form = FORM_TEXT;
        switch (c) {
        case 'j':
            form = FORM_JSON;
            break;
        case OPT_FOLDED:
            form = FORM_FOLDED;
            break;
        case OPT_SVG:
            form = FORM_SVG;
            break;
        case OPT_HTML:
            form = FORM_HTML;
            break;
        case OPT_PPROF:
            form = FORM_PPROF;
            break;
        case 'e':
            if (parse_window(optarg, &o.window) != 0)
                return usage_error("--epochs wants A:B with A <= B (either may be empty)",
                                   optarg);
            break;
        case OPT_ALL_EPOCHS:
            o.all_epochs = 1;
            break;
        case OPT_SCRIPT_FUNCTIONS:
            o.script_functions = 1;
            break;
        case OPT_BASE:
            if (parse_window(optarg, &o.base) != 0)
                return usage_error("--base wants A:B with A <= B (either may be empty)",
                                   optarg);
            o.has_base = 1;
            break;
        case OPT_FREED:
            if (parse_window(optarg, &o.freed) != 0)
                return usage_error("--freed wants A:B with A <= B (either may be empty)",
                                   optarg);
            o.has_freed = 1;
            break;
        case OPT_MODEL: {
            churn_model m;
            if (!churn_model_parse(optarg, &m))
                return usage_error("--model wants none, page[:BYTES], glibc, gperftools, "
                                   "tcmalloc or jemalloc[:PAGE]",
                                   optarg);
            o.model = optarg;
            break;
        }
        case 't': {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (errno || *end || end == optarg || optarg[0] == '-')
                return usage_error("--top wants a number", optarg);
            o.top = (size_t)v;
            has_top = 1;
            break;
        }
        case OPT_SUPPRESS: {
            char err[600];
            if (!churn_suppressions_load(&o.suppress, optarg, err, sizeof err)) {
                fprintf(stderr, "churn-analyze: %s\n", err);
                churn_suppressions_free(&o.suppress);
                return 2;
            }
            break;
        }
        case OPT_NO_DEFAULT_SUPPRESS:
            o.no_default_suppressions = 1;
            break;
        case OPT_TREE:
            o.tree = 1;
            break;
        case OPT_DIFF:
            o.diff_old = optarg;
            break;
        case 'o':
            o.output = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            puts("churn-analyze " CHURN_VERSION);
            return 0;
        default:
            return usage_error("unknown or incomplete option", argv[optind - 1]);
        }
        if (form != FORM_TEXT) {
            if (set_form(&o, form, optarg) != 0)
                return usage_error("choose one of --json, --folded, --svg, --html, --pprof",
                                   argv[optind - 1]);
            if ((form == FORM_FOLDED || form == FORM_SVG) && !o.metric)
                return usage_error("unknown metric (alloc_bytes, allocs, live_bytes, "
                                   "live_count, retained, growth, leaked, pinned)",
                                   optarg);
        }
    }
    if (optind != argc - 1)
        return usage_error(optind == argc ? "no trace file given" : "only one trace file",
                           NULL);
    if (o.has_base && o.form != FORM_FOLDED && o.form != FORM_SVG)
        return usage_error("--base goes with --folded or --svg", NULL);
    if (o.form == FORM_PPROF && !o.output && isatty(STDOUT_FILENO))
        return usage_error("--pprof writes a binary file: give -o FILE", NULL);
    if (o.tree && o.form != FORM_TEXT && o.form != FORM_JSON)
        return usage_error("--tree goes with the text report or --json", NULL);
    if (o.tree && !strcmp(argv[optind], "-"))
        return usage_error("--tree reads the index beside a trace, not standard input", NULL);
    if (o.diff_old &&
        (o.tree || o.has_base || o.has_freed || o.form == FORM_PPROF || o.form == FORM_SVG))
        return usage_error("--diff OLD NEW goes with the text report, --json, --html or "
                           "--folded, without --tree, --base or --freed",
                           NULL);
    if (o.diff_old && !strcmp(o.diff_old, "-") && !strcmp(argv[optind], "-"))
        return usage_error("--diff: only one of OLD and NEW can be standard input", NULL);
    if (!has_top)
        o.top = o.tree && o.form == FORM_TEXT ? TREE_TOP_DEFAULT
                : o.form == FORM_TEXT         ? TEXT_TOP_DEFAULT
                : o.form == FORM_HTML ? HTML_TOP_DEFAULT
                                      : 0;
    if (!o.no_default_suppressions)
        churn_suppressions_defaults(&o.suppress);
    int status = o.diff_old ? analyze_diff(o.diff_old, argv[optind], &o)
                 : o.tree   ? analyze_tree(argv[optind], &o)
                            : analyze(argv[optind], &o, NULL, NULL, "");
    churn_suppressions_free(&o.suppress);
    return status;
}
