#include "live/watch.h"

#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "live/find.h"
#include "live/follow.h"
#include "live/view.h"

#define HISTORY 120 /* points kept per sparkline */
#define READ_BUDGET (8u << 20)
#define EXEC_WAIT_S 10.0 /* how long an exec's next image may take to write its trace */

enum { P_RSS, P_LIVE, P_SLACK, P_PINNED, P_FREE, P_OUTSIDE, P_UNTRACED, PARTS };
static const char *const part_names[PARTS] = {"rss",      "live",    "slack",     "pinned",
                                              "free-res", "outside", "not traced"};

typedef struct series {
    double v[HISTORY]; /* NAN: not known at that point */
    size_t n;
} series;

typedef struct watch {
    int tty, utf8;
    double interval;
    size_t top;
    long pid; /* PID mode: the process given, whose traces are found by its files */
    char *trace;
    churn_follow *f;
    churn_view view;
    int has_view;
    uint64_t view_gen;
    churn_follow_job *job; /* the view being computed, of generation job_gen */
    uint64_t job_gen;
    char view_err[256];
    series parts[PARTS];
    double rate_t; /* allocations per second between two views */
    uint64_t rate_allocs;
    double alloc_rate;
    int lines_drawn;
} watch;

static volatile sig_atomic_t stop_signal;
static struct termios saved_termios;
static int termios_saved;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_signal(int sig)
{
    stop_signal = sig;
}

static void terminal_restore(void)
{
    if (termios_saved) {
        tcsetattr(STDIN_FILENO, TCSANOW, &saved_termios);
        termios_saved = 0;
        fputs("\033[?25h", stdout); /* the cursor again */
        fflush(stdout);
    }
}

/* Keys one at a time without echo, for `q`; the cursor hidden while the view is drawn. */
static void terminal_setup(void)
{
    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_termios) != 0)
        return;
    struct termios raw = saved_termios;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) != 0)
        return;
    termios_saved = 1;
    atexit(terminal_restore);
    fputs("\033[?25l\033[H\033[2J", stdout);
}

static int columns(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    return 80;
}

static void push(series *s, double v)
{
    if (s->n == HISTORY) {
        memmove(s->v, s->v + 1, (HISTORY - 1) * sizeof *s->v);
        s->n--;
    }
    s->v[s->n++] = v;
}

/* The newest `width` points of s as a sparkline, scaled between their least and greatest. */
static void sparkline(FILE *out, const series *s, int width, int utf8)
{
    static const char *const blocks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                         "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char ascii[] = "_.-=+*#@";
    size_t from = s->n > (size_t)width ? s->n - (size_t)width : 0;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = from; i < s->n; i++)
        if (!isnan(s->v[i])) {
            lo = fmin(lo, s->v[i]);
            hi = fmax(hi, s->v[i]);
        }
    for (size_t i = from; i < s->n; i++) {
        if (isnan(s->v[i])) {
            fputc(' ', out);
            continue;
        }
        int k = hi > lo ? (int)((s->v[i] - lo) / (hi - lo) * 7.0 + 0.5) : 0;
        if (utf8)
            fputs(blocks[k], out);
        else
            fputc(ascii[k], out);
    }
}

/* Takes the view being computed when it is done (wait: waits for it), and starts the next
   when the trace moved on since. */
static void take_view(watch *w, int wait)
{
    if (w->job) {
        churn_view v;
        int rc = churn_view_done(w->job, wait, &v, w->view_err, sizeof w->view_err);
        if (rc == 0)
            return;
        w->job = NULL;
        if (rc > 0) {
            w->view_err[0] = '\0';
            double t = now_s();
            if (w->has_view && t > w->rate_t && v.allocs >= w->rate_allocs)
                w->alloc_rate = (double)(v.allocs - w->rate_allocs) / (t - w->rate_t);
            w->rate_t = t;
            w->rate_allocs = v.allocs;
            w->view = v;
            w->has_view = 1;
            w->view_gen = w->job_gen;
        }
    }
    uint64_t gen = churn_follow_generation(w->f);
    if (!churn_follow_analysis(w->f) || (w->has_view && gen == w->view_gen))
        return;
    w->job_gen = gen;
    w->job = churn_view_start(w->f, w->top, w->view_err, sizeof w->view_err);
    if (w->job && wait)
        take_view(w, 1);
}

static void record_history(watch *w)
{
    const churn_view *v = &w->view;
    int have = w->has_view && v->has_split;
    double known[PARTS] = {
        have && v->has_rss ? (double)v->rss : NAN,
        have ? (double)v->live : NAN,
        have ? (double)v->slack : NAN,
        have ? (double)v->pinned : NAN,
        have && v->has_free ? (double)v->free_resident : NAN,
        have && v->has_outside && !v->outside_with_free ? (double)v->outside : NAN,
        have && v->has_untraced ? (double)v->untraced : NAN,
    };
    for (int p = 0; p < PARTS; p++)
        push(&w->parts[p], known[p]);
}

static const char *bytes(double v, char *buf, size_t len)
{
    return churn_view_bytes(v, buf, len);
}

static const char *basename_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void header(FILE *out, const watch *w, int width)
{
    const churn_trace_info *info = churn_follow_info(w->f);
    const char *exe = churn_follow_exe(w->f);
    char head[512];
    int n = snprintf(head, sizeof head, "churn watch  pid %llu  %s  %s",
                     info ? (unsigned long long)info->pid : 0ull,
                     exe[0] ? basename_of(exe) : "?", churn_follow_trace(w->f));
    if (w->tty && n + 12 < width)
        fprintf(out, "%s%*s\n", head, width - n - 1, "[q quits]");
    else
        fprintf(out, "%s\n", head);
}

/* How long the traced process has run: from its trace's start to now, by the wall clock. */
static double uptime(const watch *w)
{
    const churn_trace_info *info = churn_follow_info(w->f);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    double start = info ? (double)info->start_realtime_ns / 1e9 : now;
    return now > start ? now - start : 0;
}

static void status_line(FILE *out, const watch *w)
{
    const churn_view *v = &w->view;
    char b[32];
    fprintf(out, "up %.0f s  epoch %llu", uptime(w), (unsigned long long)v->last_epoch);
    fprintf(out, "  allocs %llu", (unsigned long long)v->allocs);
    if (w->alloc_rate > 0)
        fprintf(out, " (%.0f/s)", w->alloc_rate);
    fprintf(out, "  frees %llu  live %lld objects (%s)", (unsigned long long)v->frees,
            (long long)v->live_count, bytes((double)v->live_bytes, b, sizeof b));
    if (v->sample_bytes)
        fprintf(out, "  sampled every %llu B", (unsigned long long)v->sample_bytes);
    if (v->dropped_events)
        fprintf(out, "  %llu events dropped", (unsigned long long)v->dropped_events);
    if (churn_follow_lost(w->f))
        fprintf(out, "  %llu segments lost unread",
                (unsigned long long)churn_follow_lost(w->f));
    fputc('\n', out);
}

static void parts(FILE *out, const watch *w, int width)
{
    const churn_view *v = &w->view;
    int spark = width - 34;
    if (spark > HISTORY)
        spark = HISTORY;
    for (int p = 0; p < PARTS; p++) {
        const series *s = &w->parts[p];
        double now = s->n ? s->v[s->n - 1] : NAN;
        char b[32], slope[40] = "";
        if (p == P_RSS && v->rss_r2 > 0)
            snprintf(slope, sizeof slope, "%s%s/ep", v->rss_per_epoch >= 0 ? "+" : "",
                     bytes(v->rss_per_epoch, b, sizeof b));
        if (p == P_LIVE && v->live_r2 > 0)
            snprintf(slope, sizeof slope, "%s%s/ep", v->live_per_epoch >= 0 ? "+" : "",
                     bytes(v->live_per_epoch, b, sizeof b));
        const char *value = isnan(now) ? "-" : bytes(now, b, sizeof b);
        if (p == P_OUTSIDE && w->has_view && v->outside_with_free)
            value = "with free";
        fprintf(out, "  %-10s %9s %11s ", part_names[p], value, slope);
        if (spark > 0)
            sparkline(out, s, spark, w->utf8);
        fputc('\n', out);
    }
}

static void functions(FILE *out, const watch *w, int width)
{
    const churn_view *v = &w->view;
    fprintf(out, "Top functions by growth:\n");
    fprintf(out, "  %11s %10s %9s  %-15s %-16s %s\n", "growth/ep", "live", "objects",
            "retention", "type", "function");
    if (!v->nfns)
        fputs("  (none yet)\n", out);
    for (size_t i = 0; i < v->nfns; i++) {
        const churn_view_fn *fn = &v->fns[i];
        char b1[32], b2[32], line[1024], growth[40];
        snprintf(growth, sizeof growth, "%s%s", fn->bytes_per_epoch >= 0.5 ? "+" : "",
                 bytes(fn->bytes_per_epoch, b1, sizeof b1));
        int n = snprintf(line, sizeof line, "  %11s %10s %9lld  %-15s %-16.16s %s%s%s%s%s%s",
                         growth, bytes((double)fn->live_bytes, b2, sizeof b2),
                         (long long)fn->live_count, fn->retention, fn->type, fn->name,
                         fn->module[0] ? " (" : "", fn->module, fn->module[0] ? ")" : "",
                         fn->caller[0] ? " called from " : "", fn->caller);
        if (w->tty && n > width - 1)
            line[width - 1] = '\0';
        fprintf(out, "%s\n", line);
    }
}

/* One frame of the view, drawn over the last from the top left, each line cleared to its
   end, then what is below it. */
static void draw(watch *w)
{
    int width = w->tty ? columns() : 200;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return;
    header(out, w, width);
    enum churn_follow_state st = churn_follow_state_of(w->f);
    if (!w->has_view) {
        fprintf(out, "%s\n",
                st == CHURN_FOLLOW_WAITING ? churn_follow_why(w->f)
                : w->view_err[0]           ? w->view_err
                                           : "reading the trace");
    } else {
        status_line(out, w);
        parts(out, w, width);
        functions(out, w, width);
    }
    fclose(out);
    fputs("\033[H", stdout);
    for (char *line = text, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl)
            break;
        fwrite(line, 1, (size_t)(nl - line), stdout);
        fputs("\033[K\n", stdout);
    }
    fputs("\033[J", stdout);
    fflush(stdout);
    free(text);
}

/* Without a terminal: one line per interval. */
static void log_line(watch *w)
{
    const churn_trace_info *info = churn_follow_info(w->f);
    time_t t = time(NULL);
    struct tm tm;
    char clock[16];
    strftime(clock, sizeof clock, "%H:%M:%S", localtime_r(&t, &tm));
    printf("%s pid %llu up %.1f s", clock, info ? (unsigned long long)info->pid : 0ull,
           uptime(w));
    if (!w->has_view) {
        printf(" %s\n", churn_follow_state_of(w->f) == CHURN_FOLLOW_WAITING
                            ? churn_follow_why(w->f)
                        : w->view_err[0] ? w->view_err
                                         : "reading the trace");
        fflush(stdout);
        return;
    }
    const churn_view *v = &w->view;
    char b[32];
    printf(" epoch %llu allocs %llu live %s", (unsigned long long)v->last_epoch,
           (unsigned long long)v->allocs, bytes((double)v->live_bytes, b, sizeof b));
    for (int p = 0; p < PARTS; p++) {
        const series *s = &w->parts[p];
        double x = s->n ? s->v[s->n - 1] : NAN;
        if (p != P_LIVE)
            printf(" %s %s", part_names[p], isnan(x) ? "-" : bytes(x, b, sizeof b));
    }
    if (v->nfns) {
        char g[32];
        printf(" top %s %s%s/epoch live %s", v->fns[0].name,
               v->fns[0].bytes_per_epoch >= 0.5 ? "+" : "",
               bytes(v->fns[0].bytes_per_epoch, g, sizeof g),
               bytes((double)v->fns[0].live_bytes, b, sizeof b));
    }
    putchar('\n');
    fflush(stdout);
}

static void show(watch *w)
{
    if (w->tty)
        draw(w);
    else
        log_line(w);
}

static void start_image(watch *w, char *trace)
{
    churn_follow_finish_cancel(w->job);
    w->job = NULL;
    if (w->f)
        churn_follow_free(w->f);
    free(w->trace);
    w->trace = trace;
    w->f = churn_follow_new(trace);
    w->has_view = 0;
    w->view_err[0] = '\0';
    w->alloc_rate = 0;
    memset(w->parts, 0, sizeof w->parts);
}

/* After an exec: the next image's trace, when it writes one. */
static char *next_image(watch *w)
{
    char err[256];
    if (w->pid > 0)
        return churn_find_pid_trace(w->pid, w->trace, err, sizeof err);
    return churn_find_next_image(w->trace);
}

static int parse_args(watch *w, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"interval", required_argument, NULL, 'i'},
        {"top", required_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+i:t:", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'i':
            errno = 0;
            w->interval = strtod(optarg, &end);
            if (errno || *end || end == optarg ||
                !(w->interval >= 0.1 && w->interval <= 3600)) {
                fprintf(stderr, "churn watch: --interval wants seconds from 0.1 to 3600: %s\n",
                        optarg);
                return 2;
            }
            break;
        case 't': {
            errno = 0;
            unsigned long v = strtoul(optarg, &end, 10);
            if (errno || *end || end == optarg || optarg[0] == '-' || v < 1 ||
                v > CHURN_VIEW_TOP_MAX) {
                fprintf(stderr, "churn watch: --top wants 1 to %d: %s\n", CHURN_VIEW_TOP_MAX,
                        optarg);
                return 2;
            }
            w->top = v;
            break;
        }
        default:
            fprintf(stderr, "churn watch: unknown or incomplete option %s\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "churn watch: give one trace file or pid\n");
        return 2;
    }
    return 0;
}

/* TRACE, or a PID when no file of that name is there. */
static char *target(watch *w, const char *arg)
{
    char *end;
    long pid = strtol(arg, &end, 10);
    if (*arg && !*end && pid > 0 && access(arg, F_OK) != 0) {
        char err[256];
        char *trace = churn_find_pid_trace(pid, NULL, err, sizeof err);
        if (!trace)
            fprintf(stderr, "churn watch: pid %ld: %s\n", pid, err);
        w->pid = pid;
        return trace;
    }
    return churn_xstrdup(arg);
}

static int wait_key(watch *w, double seconds)
{
    if (!termios_saved) {
        if (seconds > 0)
            usleep((useconds_t)(seconds * 1e6));
        return 0;
    }
    struct pollfd p = {STDIN_FILENO, POLLIN, 0};
    if (poll(&p, 1, (int)(seconds * 1000)) > 0) {
        char c;
        while (read(STDIN_FILENO, &c, 1) == 1)
            if (c == 'q' || c == 'Q')
                return 1;
    }
    (void)w;
    return 0;
}

int churn_watch_main(int argc, char **argv)
{
    watch w = {.interval = 1.0, .top = 10};
    int rc = parse_args(&w, argc, argv);
    if (rc)
        return rc;
    char *trace = target(&w, argv[optind]);
    if (!trace)
        return 1;
    setlocale(LC_CTYPE, "");
    w.utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
    w.tty = isatty(STDOUT_FILENO);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    if (w.tty)
        terminal_setup();
    start_image(&w, trace);
    double next = now_s(), exec_at = 0;
    int status = 0;
    for (;;) {
        double t0 = now_s();
        while (churn_follow_poll(w.f, READ_BUDGET) && now_s() - t0 < w.interval / 2)
            ;
        enum churn_follow_state st = churn_follow_state_of(w.f);
        const churn_follow_end *end = churn_follow_end_of(w.f);
        if (st == CHURN_FOLLOW_FAILED) {
            terminal_restore();
            fprintf(stderr, "churn watch: %s: %s\n", w.trace, churn_follow_why(w.f));
            status = 1;
            break;
        }
        if (st == CHURN_FOLLOW_ENDED && end->kind == CHURN_FOLLOW_EXIT &&
            end->how == CHURN_EXIT_EXEC) {
            if (!exec_at)
                exec_at = now_s();
            char *nt = next_image(&w);
            if (nt) {
                if (!w.tty)
                    printf("pid %llu exec: the next image writes %s\n",
                           (unsigned long long)churn_follow_info(w.f)->pid, nt);
                start_image(&w, nt);
                exec_at = 0;
                continue;
            }
            if (now_s() - exec_at < EXEC_WAIT_S)
                goto wait;
        }
        if (st == CHURN_FOLLOW_ENDED) {
            take_view(&w, 1);
            record_history(&w);
            show(&w);
            terminal_restore();
            char b[512];
            const churn_trace_info *info = churn_follow_info(w.f);
            const char *exe = churn_follow_exe(w.f);
            printf("pid %llu (%s) ended: %s%s\n", info ? (unsigned long long)info->pid : 0ull,
                   exe[0] ? basename_of(exe) : "?", churn_follow_end_text(w.f, b, sizeof b),
                   end->how == CHURN_EXIT_EXEC ? " (the next image writes no trace)" : "");
            break;
        }
        take_view(&w, 0);
        if (now_s() >= next) {
            record_history(&w);
            show(&w);
            next += w.interval;
            if (next < now_s())
                next = now_s() + w.interval;
        }
    wait:
        if (stop_signal || wait_key(&w, fmin(0.1, fmax(0, next - now_s()))))
            break;
    }
    terminal_restore();
    churn_follow_finish_cancel(w.job);
    churn_follow_free(w.f);
    free(w.trace);
    return status;
}
