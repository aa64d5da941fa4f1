#include "report/proctree.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uthash.h>

#include "analyze/analysis.h"
#include "report/report.h"
#include "report/session.h"
#include "analyze/trends.h"
#include "base/util.h"

/* ---- the index ---- */

char *churn_proctree_index_of(const char *trace)
{
    size_t len = strlen(trace);
    if (len > 6 && !strcmp(trace + len - 6, ".index"))
        return churn_xstrdup(trace);
    size_t stem = len > 4 && !strcmp(trace + len - 4, ".zst") ? len - 4 : len;
    char *out = churn_xmalloc(stem + sizeof ".index");
    memcpy(out, trace, stem);
    memcpy(out + stem, ".index", sizeof ".index");
    return out;
}

/* Undoes the index's escapes in place; given first_word_end, it is set where the first bare
   space (the end of argv[0]) lands. */
static char *unescape(char *s, char **first_word_end)
{
    char *o = s;
    if (first_word_end)
        *first_word_end = NULL;
    for (char *p = s; *p; p++) {
        if (*p == ' ' && first_word_end && !*first_word_end)
            *first_word_end = o;
        if (*p == '\\' && p[1]) {
            p++;
            *o++ = *p == 't' ? '\t' : *p == 'n' ? '\n' : *p == 's' ? ' ' : *p;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return s;
}

/* An index can be as long as a file can, and every end line, and every row of a summary,
   looks an image up: the images by pid and n, the first of each, in a hash table. */
typedef struct image_key {
    long pid, n;
} image_key;
_Static_assert(sizeof(image_key) == 2 * sizeof(long), "a key's bytes are hashed: no padding");

struct churn_proc_index {
    image_key key;
    size_t i;
    UT_hash_handle hh;
};

churn_proc *churn_proctree_find(const churn_proctree *t, long pid, int n)
{
    image_key k = {pid, n};
    struct churn_proc_index *e;
    HASH_FIND(hh, t->by_image, &k, sizeof k, e);
    return e ? &t->v[e->i] : NULL;
}

/* The traces the start lines named so far, by path and by file. */
typedef struct named_path {
    UT_hash_handle hh;
    char path[];
} named_path;

typedef struct file_key {
    dev_t dev;
    ino_t ino;
} file_key;
_Static_assert(sizeof(file_key) == sizeof(dev_t) + sizeof(ino_t), "no padding in a key");

typedef struct named_file {
    file_key key;
    UT_hash_handle hh;
} named_file;

typedef struct named {
    named_path *paths;
    named_file *files;
} named;

/* Whether a start line's trace was named before (and if not, it is from now on). */
static int named_before(named *seen, const char *trace)
{
    size_t len = strlen(trace);
    named_path *p;
    HASH_FIND(hh, seen->paths, trace, len, p);
    if (p)
        return 1;
    p = churn_xmalloc(sizeof *p + len + 1);
    memcpy(p->path, trace, len + 1);
    HASH_ADD_KEYPTR(hh, seen->paths, p->path, len, p);
    struct stat st;
    if (stat(trace, &st) != 0)
        return 0;
    file_key k = {st.st_dev, st.st_ino};
    named_file *f;
    HASH_FIND(hh, seen->files, &k, sizeof k, f);
    if (f)
        return 1;
    f = churn_xmalloc(sizeof *f);
    f->key = k;
    HASH_ADD(hh, seen->files, key, sizeof f->key, f);
    return 0;
}

static void named_free(named *seen)
{
    named_path *p, *pn;
    HASH_ITER(hh, seen->paths, p, pn) {
        HASH_DEL(seen->paths, p);
        free(p);
    }
    named_file *f, *fn;
    HASH_ITER(hh, seen->files, f, fn) {
        HASH_DEL(seen->files, f);
        free(f);
    }
}

churn_proc *churn_proctree_last(const churn_proctree *t, long pid)
{
    churn_proc *best = NULL;
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].pid == pid && (!best || t->v[i].n > best->n))
            best = &t->v[i];
    return best;
}

int churn_proctree_load(const char *path, churn_proctree *t)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0, alloc = 0;
    ssize_t got;
    named seen = {0};
    while ((got = getline(&line, &cap, f)) > 0) {
        if (line[got - 1] == '\n')
            line[--got] = '\0';
        char *field[7] = {0};
        size_t nf = 0;
        for (char *p = line, *tab; nf < 7; p = tab + 1) {
            field[nf++] = p;
            if (!(tab = strchr(p, '\t')))
                break;
            *tab = '\0';
        }
        if (nf == 7 && !strcmp(field[0], "start")) {
            if (named_before(&seen, unescape(field[4], NULL))) {
                t->repeated++;
                continue;
            }
            churn_reserve(&t->v, &alloc, t->n + 1, sizeof *t->v);
            churn_proc *p = &t->v[t->n++];
            memset(p, 0, sizeof *p);
            p->pid = atol(field[1]);
            p->ppid = atol(field[2]);
            p->n = atoi(field[3]);
            image_key k = {p->pid, p->n};
            struct churn_proc_index *e;
            HASH_FIND(hh, t->by_image, &k, sizeof k, e);
            if (!e) {
                e = churn_xmalloc(sizeof *e);
                e->key = k;
                e->i = t->n - 1;
                HASH_ADD(hh, t->by_image, key, sizeof e->key, e);
            }
            p->trace = churn_xstrdup(field[4]);
            p->exe = churn_xstrdup(unescape(field[5], NULL));
            char *end0;
            unescape(field[6], &end0);
            p->command = churn_xstrdup(field[6]);
            p->argv0 = churn_xstrdup(field[6]);
            if (end0)
                p->argv0[end0 - field[6]] = '\0';
        } else if ((nf == 5 || nf == 6) && !strcmp(field[0], "end")) {
            churn_proc *p = churn_proctree_find(t, atol(field[1]), atoi(field[2]));
            if (p) {
                p->ended = 1;
                p->how = atoi(field[3]);
                p->detail = atoi(field[4]);
                /* the title the process gave itself after it started (a server's workers);
                   the same command less its trailing empty words is no title */
                if (nf == 6 && *unescape(field[5], NULL) &&
                    strncmp(field[5], p->command, strlen(field[5]))) {
                    free(p->command);
                    p->command = churn_xstrdup(field[5]);
                }
            }
        }
    }
    free(line);
    fclose(f);
    named_free(&seen);
    if (!t->n) {
        churn_proctree_free(t);
        return -1;
    }
    return 0;
}

void churn_proctree_free(churn_proctree *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].trace);
        free(t->v[i].exe);
        free(t->v[i].argv0);
        free(t->v[i].command);
    }
    free(t->v);
    struct churn_proc_index *e, *next;
    HASH_ITER(hh, t->by_image, e, next) {
        HASH_DEL(t->by_image, e);
        free(e);
    }
    memset(t, 0, sizeof *t);
}

const char *churn_proc_end(const churn_proctree *t, const churn_proc *p, char *buf,
                           size_t size)
{
    if (!p->ended)
        return churn_proctree_find(t, p->pid, p->n + 1) ? "exec" : "killed";
    static const char *const what[] = {
        [CHURN_EXIT_NORMAL] = "exit",       [CHURN_EXIT_UNDERSCORE] = "_exit",
        [CHURN_EXIT_QUICK] = "quick_exit",  [CHURN_EXIT_THREADS] = "threads",
    };
    if (p->how == CHURN_EXIT_EXEC)
        return "exec";
    if (p->how == CHURN_EXIT_SIGNAL) {
        const char *abbrev = p->detail > 0 && p->detail < NSIG ? sigabbrev_np(p->detail) : NULL;
        snprintf(buf, size, "signal %d%s%s%s", p->detail, abbrev ? " (" : "",
                 abbrev ? abbrev : "", abbrev ? ")" : "");
        return buf;
    }
    if (p->how > 0 && (size_t)p->how < sizeof what / sizeof what[0] && what[p->how]) {
        snprintf(buf, size, "%s %d", what[p->how], p->detail);
        return buf;
    }
    return "?";
}

/* ---- the figures ---- */

void churn_proc_figures_of(const churn_analysis *a, churn_proc_figures *f)
{
    memset(f, 0, sizeof *f);
    f->analyzed = 1;
    f->allocs = a->totals.allocs;
    f->alloc_bytes = a->totals.alloc_bytes;
    f->frees = a->totals.frees;
    f->free_bytes = a->totals.free_bytes;
    f->peak_known = churn_peak_known(a);
    f->peak_bytes = a->peak.peak_bytes;
    /* What is left of the carried-in state is in the leaked figures (analysis.c); with
       summaries only there is no telling it apart. */
    if (a->events && !a->window.has_first && a->carried_count > 0) {
        f->carried_live_count = (uint64_t)a->carried_count;
        f->carried_live_bytes = a->carried_bytes > 0 ? (uint64_t)a->carried_bytes : 0;
    }
    f->live_count = a->leaked_count - f->carried_live_count;
    f->live_bytes = a->leaked_bytes - f->carried_live_bytes;
    f->start_live_bytes = a->start_live_bytes;
    f->growth_bytes = churn_wrap_sub((int64_t)a->leaked_bytes, (uint64_t)a->start_live_bytes);
    f->epochs = a->epochs.count;
    if (a->epochs.count >= 2) {
        churn_trends tr =
            churn_trends_compute(&a->epochs, a->growth.window_first, a->growth.window_last);
        f->has_rate = 1;
        f->growth_per_epoch = tr.live_bytes_per_epoch;
    }
    /* The epochs' summaries carry when each began and how long it lasted. */
    for (size_t i = 0; i < a->epochs.count; i++) {
        const churn_epoch_row *r = &a->epochs.rows[i];
        if (!r->has_summary)
            continue;
        if (!f->has_duration || r->start_ns < f->start_ns)
            f->start_ns = r->start_ns;
        if (!f->has_duration || r->start_ns + r->wall_ns > f->end_ns)
            f->end_ns = r->start_ns + r->wall_ns;
        f->has_duration = 1;
    }
    f->duration_ns = f->end_ns - f->start_ns;
    f->has_exit = a->has_exit;
    f->exit_how = a->exit_how;
    f->exit_detail = a->exit_detail;
}

void churn_proc_measure(const char *trace, churn_proc_figures *f)
{
    memset(f, 0, sizeof *f);
    churn_warnings warnings = {0};
    churn_trace *t = churn_trace_open(trace, &warnings, f->error, sizeof f->error);
    if (t) {
        churn_model none;
        churn_model_parse("none", &none);
        churn_progress progress;
        churn_progress_init(&progress, 0);
        churn_analysis a;
        churn_window all = {0};
        churn_analyze_window(t, all, &none, 1, &warnings, NULL, &progress, &a, NULL, NULL, 0);
        churn_proc_figures_of(&a, f);
        churn_analysis_free(&a);
        churn_trace_close(t);
    }
    churn_warnings_free(&warnings);
}

void churn_proc_take_exit(churn_proc *p, const churn_proc_figures *f)
{
    if (p->ended || !f->analyzed || !f->has_exit)
        return;
    p->ended = 1;
    p->how = (int)f->exit_how;
    p->detail = (int)f->exit_detail;
}

void churn_proctree_take_exits(churn_proctree *t)
{
    for (size_t i = 0; i < t->n; i++) {
        churn_proc *p = &t->v[i];
        if (p->ended || churn_proctree_find(t, p->pid, p->n + 1))
            continue;
        churn_proc_figures f;
        churn_proc_measure(p->trace, &f);
        churn_proc_take_exit(p, &f);
    }
}

/* Among the images whose trace was read. */
static long most(const churn_proctree *t, const churn_proc_figures *f, int by_growth)
{
    long best = -1;
    for (size_t i = 0; i < t->n; i++) {
        if (!f[i].analyzed)
            continue;
        if (best < 0 || (by_growth ? f[i].growth_bytes > f[best].growth_bytes
                                   : f[i].alloc_bytes > f[best].alloc_bytes))
            best = (long)i;
    }
    return best;
}

long churn_proctree_most_allocated(const churn_proctree *t, const churn_proc_figures *f)
{
    return most(t, f, 0);
}

long churn_proctree_grew_most(const churn_proctree *t, const churn_proc_figures *f)
{
    return most(t, f, 1);
}

/* ---- the summary ---- */

const char *churn_proc_bytes(double v, char *buf, size_t len)
{
    return churn_report_binary(v, "B", buf, len);
}

/* A growth: "+1.2KiB" or "-300B". */
static const char *growth(int64_t v, char *buf, size_t len)
{
    char b[32];
    snprintf(buf, len, "%s%s", v > 0 ? "+" : "", churn_proc_bytes((double)v, b, sizeof b));
    return buf;
}

static const char *duration(uint64_t ns, char *buf, size_t len)
{
    if (ns < 1000000000ull)
        snprintf(buf, len, "%.1fms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.2fs", (double)ns / 1e9);
    return buf;
}

static void pid_of(const churn_proc *p, char *buf, size_t len)
{
    snprintf(buf, len, p->n ? "%ld.%d" : "%ld", p->pid, p->n);
}

typedef struct sums {
    uint64_t allocs, alloc_bytes, frees, free_bytes, live_count, live_bytes;
    uint64_t carried_live_bytes;
    int64_t peak_bytes, growth_bytes;
    size_t analyzed, killed;
    int has_span;
    uint64_t first_ns, last_ns;
} sums;

static sums sum(const churn_proctree *t, const churn_proc_figures *f)
{
    sums s = {0};
    for (size_t i = 0; i < t->n; i++) {
        if (!t->v[i].ended && !churn_proctree_find(t, t->v[i].pid, t->v[i].n + 1))
            s.killed++;
        if (!f[i].analyzed)
            continue;
        s.analyzed++;
        s.allocs += f[i].allocs;
        s.alloc_bytes += f[i].alloc_bytes;
        s.frees += f[i].frees;
        s.free_bytes += f[i].free_bytes;
        s.live_count += f[i].live_count;
        s.live_bytes += f[i].live_bytes;
        s.carried_live_bytes += f[i].carried_live_bytes;
        s.peak_bytes += f[i].peak_bytes;
        s.growth_bytes += f[i].growth_bytes;
        if (f[i].has_duration) {
            if (!s.has_span || f[i].start_ns < s.first_ns)
                s.first_ns = f[i].start_ns;
            if (!s.has_span || f[i].end_ns > s.last_ns)
                s.last_ns = f[i].end_ns;
            s.has_span = 1;
        }
    }
    return s;
}

#define COMMAND_WIDTH 50

void churn_proc_command(FILE *out, const char *command, int width)
{
    int shown = 0;
    for (const unsigned char *c = (const unsigned char *)command; *c; c++) {
        char esc[8];
        if (*c == '\n' || *c == '\t' || *c == '\r')
            snprintf(esc, sizeof esc, "\\%c", *c == '\n' ? 'n' : *c == '\t' ? 't' : 'r');
        else if (*c < 0x20 || *c == 0x7f)
            snprintf(esc, sizeof esc, "\\x%02x", *c);
        else
            esc[0] = (char)*c, esc[1] = '\0';
        int n = (int)strlen(esc);
        if (shown + n > width) {
            fputs("...", out);
            return;
        }
        fputs(esc, out);
        shown += n;
    }
}

static void which(FILE *out, const char *label, const churn_proctree *t, long i,
                  const char *what)
{
    char pid[32];
    pid_of(&t->v[i], pid, sizeof pid);
    fprintf(out, "%s pid %s (", label, pid);
    churn_proc_command(out, t->v[i].command, 2 * COMMAND_WIDTH);
    fprintf(out, "): %s\n  its full report: churn-analyze %s\n", what, t->v[i].trace);
}

void churn_proctree_text(FILE *out, const char *index, const churn_proctree *t,
                         const churn_proc_figures *f)
{
    char b[6][32];
    fprintf(out, "Process tree: %zu process image(s), listed in %s\n", t->n, index);
    fprintf(out, "  %-9s %-8s %-16s %9s %9s %9s %9s %9s %9s  %s\n", "PID", "PARENT", "END",
            "DURATION", "ALLOCS", "ALLOCATED", "PEAK", "AT EXIT", "GROWTH", "COMMAND");
    for (size_t i = 0; i < t->n; i++) {
        const churn_proc *p = &t->v[i];
        const churn_proc_figures *g = &f[i];
        char pid[32];
        pid_of(p, pid, sizeof pid);
        fprintf(out, "  %-9s %-8ld %-16s ", pid, p->ppid,
                churn_proc_end(t, p, b[0], sizeof b[0]));
        if (!g->analyzed) {
            fprintf(out, "%-59s  ", "(trace not read)");
        } else {
            char allocs[32];
            snprintf(allocs, sizeof allocs, "%llu", (unsigned long long)g->allocs);
            fprintf(out, "%9s %9s %9s %9s %9s %9s  ",
                    g->has_duration ? duration(g->duration_ns, b[1], sizeof b[1]) : "-", allocs,
                    churn_proc_bytes((double)g->alloc_bytes, b[2], sizeof b[2]),
                    g->peak_known ? churn_proc_bytes((double)g->peak_bytes, b[3], sizeof b[3])
                                  : "-",
                    churn_proc_bytes((double)g->live_bytes, b[4], sizeof b[4]),
                    growth(g->growth_bytes, b[5], sizeof b[5]));
        }
        churn_proc_command(out, p->command, COMMAND_WIDTH);
        fputc('\n', out);
    }
    sums s = sum(t, f);
    char allocs[32];
    snprintf(allocs, sizeof allocs, "%llu", (unsigned long long)s.allocs);
    fprintf(out, "  %-35s %9s %9s %9s %9s %9s %9s  (sums; the duration is the tree's)\n",
            "total", s.has_span ? duration(s.last_ns - s.first_ns, b[1], sizeof b[1]) : "-",
            allocs, churn_proc_bytes((double)s.alloc_bytes, b[2], sizeof b[2]),
            churn_proc_bytes((double)s.peak_bytes, b[3], sizeof b[3]),
            churn_proc_bytes((double)s.live_bytes, b[4], sizeof b[4]),
            growth(s.growth_bytes, b[5], sizeof b[5]));
    fputs("  ALLOCATED: bytes requested.  PEAK: the image's own high-water mark (their sum "
          "bounds the tree's).\n  AT EXIT: live at the end of its trace, allocated by the image "
          "itself.  GROWTH: live at its end\n  minus live at its start (a forked child starts "
          "with copies of its parent's objects,\n  which the parent's row has).\n", out);
    if (s.carried_live_bytes)
        fprintf(out, "  Carried in and still live at the ends, not in AT EXIT: %s (forked "
                     "children's copies of their\n  parents' objects, or objects of segments "
                     "the ring overwrote).\n",
                churn_proc_bytes((double)s.carried_live_bytes, b[0], sizeof b[0]));
    if (s.killed)
        fprintf(out, "  Killed: %zu image(s) ended with no exit and no exec that libchurn saw "
                     "(SIGKILL, or still running);\n  their traces end at their last "
                     "checkpoint (a segment written, or the open one in part).\n", s.killed);
    if (s.analyzed < t->n)
        fprintf(out, "  %zu trace(s) could not be read (a line on stderr says why).\n",
                t->n - s.analyzed);
    if (t->repeated)
        fprintf(out,
                "  The index lists %zu more line(s) naming a trace listed above: each trace "
                "is read and shown once.\n",
                t->repeated);
    long most = churn_proctree_most_allocated(t, f);
    long grew = churn_proctree_grew_most(t, f);
    if (most >= 0) {
        char what[96];
        snprintf(what, sizeof what, "%s in %llu allocations",
                 churn_proc_bytes((double)f[most].alloc_bytes, b[0], sizeof b[0]),
                 (unsigned long long)f[most].allocs);
        which(out, "Allocated most:", t, most, what);
    }
    if (grew >= 0 && f[grew].growth_bytes > 0) {
        char what[128];
        int n = snprintf(what, sizeof what, "%s live at its end",
                         growth(f[grew].growth_bytes, b[0], sizeof b[0]));
        if (f[grew].has_rate)
            snprintf(what + n, sizeof what - (size_t)n, ", %s per epoch over %zu epochs",
                     churn_proc_bytes(f[grew].growth_per_epoch, b[1], sizeof b[1]), f[grew].epochs);
        which(out, "Grew most:", t, grew, what);
    } else if (grew >= 0) {
        fputs("Grew most: none (no image ended with more live than it began with)\n", out);
    }
}

static void json_u64(FILE *out, const char *key, unsigned long long v)
{
    fprintf(out, ", \"%s\": %llu", key, v);
}

static void json_i64(FILE *out, const char *key, long long v)
{
    fprintf(out, ", \"%s\": %lld", key, v);
}

void churn_proctree_json_proc(FILE *out, const churn_proctree *t, const churn_proc *p)
{
    char end[48];
    fprintf(out, "\"pid\": %ld, \"image\": %d, \"parent\": %ld, \"end\": ", p->pid, p->n,
            p->ppid);
    churn_report_json_string(out, churn_proc_end(t, p, end, sizeof end));
    fputs(", \"command\": ", out);
    churn_report_json_string(out, p->command);
    fputs(", \"executable\": ", out);
    churn_report_json_string(out, p->exe);
    fputs(", \"trace\": ", out);
    churn_report_json_string(out, p->trace);
}

static void json_which(FILE *out, const char *key, const churn_proctree *t, long i)
{
    fprintf(out, ", \"%s\": ", key);
    if (i < 0) {
        fputs("null", out);
        return;
    }
    fprintf(out, "{\"pid\": %ld, \"image\": %d, \"trace\": ", t->v[i].pid, t->v[i].n);
    churn_report_json_string(out, t->v[i].trace);
    fputc('}', out);
}

void churn_proctree_json(FILE *out, const char *index, const churn_proctree *t,
                         const churn_proc_figures *f)
{
    fputs("{\"index\": ", out);
    churn_report_json_string(out, index);
    fprintf(out, ", \"repeated_lines\": %zu, \"images\": [", t->repeated);
    for (size_t i = 0; i < t->n; i++) {
        const churn_proc_figures *g = &f[i];
        fputs(i ? ",\n  {" : "\n  {", out);
        churn_proctree_json_proc(out, t, &t->v[i]);
        fprintf(out, ", \"analyzed\": %s", g->analyzed ? "true" : "false");
        if (!g->analyzed) {
            fputs(", \"error\": ", out);
            churn_report_json_string(out, g->error);
            fputc('}', out);
            continue;
        }
        fputs(", \"trace_exit\": ", out);
        if (g->has_exit)
            fprintf(out, "{\"how\": %llu, \"detail\": %llu}", (unsigned long long)g->exit_how,
                    (unsigned long long)g->exit_detail);
        else
            fputs("null", out);
        json_u64(out, "allocs", g->allocs);
        json_u64(out, "alloc_bytes", g->alloc_bytes);
        json_u64(out, "frees", g->frees);
        json_u64(out, "free_bytes", g->free_bytes);
        fputs(", \"peak_bytes\": ", out);
        if (g->peak_known)
            fprintf(out, "%lld", (long long)g->peak_bytes);
        else
            fputs("null", out);
        json_u64(out, "live_at_exit_count", g->live_count);
        json_u64(out, "live_at_exit_bytes", g->live_bytes);
        json_u64(out, "carried_live_at_exit_count", g->carried_live_count);
        json_u64(out, "carried_live_at_exit_bytes", g->carried_live_bytes);
        json_i64(out, "start_live_bytes", g->start_live_bytes);
        json_i64(out, "growth_bytes", g->growth_bytes);
        json_u64(out, "epochs", g->epochs);
        fputs(", \"growth_bytes_per_epoch\": ", out);
        if (g->has_rate)
            fprintf(out, "%.10g", g->growth_per_epoch);
        else
            fputs("null", out);
        fputs(", \"duration_ns\": ", out);
        if (g->has_duration)
            fprintf(out, "%llu", (unsigned long long)g->duration_ns);
        else
            fputs("null", out);
        fputc('}', out);
    }
    sums s = sum(t, f);
    fprintf(out, "\n], \"totals\": {\"images\": %zu, \"analyzed\": %zu, \"killed\": %zu",
            t->n, s.analyzed, s.killed);
    json_u64(out, "allocs", s.allocs);
    json_u64(out, "alloc_bytes", s.alloc_bytes);
    json_u64(out, "frees", s.frees);
    json_u64(out, "free_bytes", s.free_bytes);
    json_i64(out, "peak_bytes_sum", s.peak_bytes);
    json_u64(out, "live_at_exit_count", s.live_count);
    json_u64(out, "live_at_exit_bytes", s.live_bytes);
    json_u64(out, "carried_live_at_exit_bytes", s.carried_live_bytes);
    json_i64(out, "growth_bytes", s.growth_bytes);
    fputs(", \"duration_ns\": ", out);
    if (s.has_span)
        fprintf(out, "%llu", (unsigned long long)(s.last_ns - s.first_ns));
    else
        fputs("null", out);
    fputc('}', out);
    json_which(out, "allocated_most", t, churn_proctree_most_allocated(t, f));
    long grew = churn_proctree_grew_most(t, f);
    json_which(out, "grew_most", t, grew >= 0 && f[grew].growth_bytes > 0 ? grew : -1);
    fputc('}', out);
}
