#include "report/report.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "base/util.h"
#include "churn/allocators.h"
#include "churn/engines.h"
#include "churn/own_libraries.h"
#include "churn/runtime_heaps.h"
#include "report/proctree.h"
#include "symbols/dbgsym.h"

static int worth_showing(const churn_callsite *s)
{
    return s->allocs || s->frees || s->live_count || s->live_bytes;
}

churn_callsite **churn_report_callsites(churn_analysis *a, size_t top, size_t *n)
{
    size_t total, kept = 0;
    churn_callsite **v = churn_growth_sorted(&a->growth, &total);
    for (size_t i = 0; i < total && (!top || kept < top); i++)
        if (worth_showing(v[i]))
            v[kept++] = v[i];
    *n = kept;
    return v;
}

int churn_report_ranked(const churn_analysis *a, const churn_growth *g, const churn_callsite *s)
{
    return churn_fit_slope(&s->bytes_fit) >= CHURN_REPORT_GROWS || s->live_bytes > 0 ||
           (a->sample_bytes && s->samples) || /* an estimate: it may grow within its error */
           churn_report_retention(a, g, s).kind != CHURN_RETENTION_STEADY;
}

churn_callsite **churn_report_functions(churn_analysis *a, const churn_report_options *o,
                                        size_t *n)
{
    size_t kept = 0, all;
    churn_callsite **rows = churn_functions_sorted(&a->functions, 0, &all);
    for (size_t i = 0; i < all && (!o->top || kept < o->top); i++)
        if (!churn_suppressions_of_function(o->suppress, rows[i]->stack))
            rows[kept++] = rows[i];
    *n = kept;
    return rows;
}

churn_callsite **churn_report_ranked_functions(churn_analysis *a, const churn_report_options *o,
                                               size_t *n, size_t *unranked)
{
    size_t kept = 0, all, left = 0;
    churn_callsite **rows = churn_functions_sorted(&a->functions, 0, &all);
    for (size_t i = 0; i < all; i++) {
        if (churn_suppressions_of_function(o->suppress, rows[i]->stack))
            continue;
        if (!churn_report_ranked(a, &a->functions.growth, rows[i]))
            left++;
        else if (!o->top || kept < o->top)
            rows[kept++] = rows[i];
    }
    *n = kept;
    *unranked = left;
    return rows;
}

const char *churn_report_exit_how(const churn_analysis *a)
{
    if (a->detached)
        return "detach";
    if (!a->has_exit)
        return "none";
    switch (a->exit_how) {
    case CHURN_EXIT_NORMAL:
        return "normal";
    case CHURN_EXIT_UNDERSCORE:
        return "_exit";
    case CHURN_EXIT_SIGNAL:
        return "signal";
    case CHURN_EXIT_EXEC:
        return "exec";
    case CHURN_EXIT_QUICK:
        return "quick_exit";
    case CHURN_EXIT_THREADS:
        return "threads";
    default:
        return "unknown";
    }
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int churn_report_run_as(const churn_report_options *o, char *file, char *name, size_t len)
{
    char *index = churn_proctree_index_of(o->trace_path);
    churn_proctree t;
    int found = 0;
    if (index && churn_proctree_load(index, &t) == 0) {
        char want[PATH_MAX], have[PATH_MAX];
        int real = realpath(o->trace_path, want) != NULL;
        for (size_t i = 0; i < t.n && !found; i++) {
            const churn_proc *p = &t.v[i];
            if (!p->trace || !p->exe || !p->argv0 || !*p->argv0)
                continue;
            if (real ? !realpath(p->trace, have) || strcmp(want, have)
                     : strcmp(base_of(p->trace), base_of(o->trace_path)))
                continue;
            found = strcmp(base_of(p->argv0), base_of(p->exe)) != 0 &&
                    strlen(base_of(p->exe)) < len && strlen(base_of(p->argv0)) < len;
            if (found) {
                strcpy(file, base_of(p->exe));
                strcpy(name, base_of(p->argv0));
            }
            break;
        }
        churn_proctree_free(&t);
    }
    free(index);
    return found;
}

const char *churn_report_exit_text(const churn_analysis *a, char *buf, size_t len)
{
    if (a->detached)
        return a->exit_detail == CHURN_DETACH_SECCOMP
                   ? "tracing stopped: the program installed a seccomp filter that stops a "
                     "system call libchurn makes; it went on untraced"
                   : "detached (churn detach); the process went on untraced";
    if (!a->has_exit && a->info->ends_open) {
        snprintf(buf, len, "no exit record (ends at a checkpoint, %.3f s in)",
                 churn_analysis_checkpoint_s(a));
        return buf;
    }
    if (!a->has_exit)
        return "no exit record";
    if (a->exit_how == CHURN_EXIT_EXEC)
        return "exec";
    if (a->exit_how == CHURN_EXIT_THREADS)
        snprintf(buf, len, "exit %llu (by its last thread)", (unsigned long long)a->exit_detail);
    else
        snprintf(buf, len, "%s %llu",
                 a->exit_how == CHURN_EXIT_NORMAL ? "exit" : churn_report_exit_how(a),
                 (unsigned long long)a->exit_detail);
    /* it was asked to stop: what it held then is live at end, not leaked */
    const char *name = a->stop_signal < NSIG ? sigabbrev_np((int)a->stop_signal) : NULL;
    if (a->stop_signal && a->exit_how != CHURN_EXIT_SIGNAL && strlen(buf) + 32 < len)
        snprintf(buf + strlen(buf), len - strlen(buf), " after it caught SIG%s",
                 name ? name : "?");
    return buf;
}

unsigned long long churn_report_segments_dropped(const churn_analysis *a)
{
    /* Delta segments before the first key segment are in the file, not used (a warning says
       which): not overwritten. */
    uint64_t before_key = a->info ? a->info->segments_before_key : 0;
    return (unsigned long long)(a->first_seq - (before_key <= a->first_seq ? before_key : 0));
}

churn_retained churn_report_retention(const churn_analysis *a, const churn_growth *g,
                                      const churn_callsite *s)
{
    if (g == &a->functions.growth)
        return churn_functions_retention(&a->functions, s, churn_analysis_ending(a));
    return churn_growth_retention(g, s, churn_analysis_ending(a));
}

const char *churn_report_retention_words(enum churn_retention kind)
{
    return kind == CHURN_RETENTION_LIVE ? "live at end" : churn_retention_name(kind);
}

const char *churn_report_type(churn_analysis *a, const churn_callsite *s)
{
    return churn_cxx_type_of(a->types, s->stack);
}

void churn_report_types(churn_analysis *a)
{
    if (a->types_done)
        return;
    churn_functions_types(&a->functions, &a->growth, a->types);
    const churn_fragmentation *f = &a->frag;
    churn_functions_pinned(&a->functions, &a->growth, f->has_before ? f->before_sites : f->sites,
                           f->has_before ? f->nbefore : f->nsites);
    a->types_done = 1;
}

/* A sample of a small object stands for about N bytes (s / p(s) = N + s/2 + ...), and the
   samples of a callsite come as a Poisson process: a figure of B bytes resting on k samples
   varies by about N sqrt(k) = B / sqrt(k).  The growth per epoch g is a least-squares slope
   over the E epochs of the window of a live value that gained k = |g| E / w samples (w the
   bytes a sample of the row stands for, its allocated bytes per sample): the slope of such
   a counting process varies by w sqrt(6 k / 5) / E; one sample more keeps the bound of a
   row that did not grow from 0.  k is at least the samples the window allocated that are
   still live: a row whose few samples came late has a slope near 0 that would otherwise
   claim a bound as tight as a row with none.  Larger objects are sampled more surely than
   that, so for them both bounds are on the safe side. */
double churn_report_growth_se(const churn_analysis *a, const churn_growth *g,
                              const churn_callsite *s, uint64_t alloc_bytes)
{
    if (!a->sample_bytes)
        return 0;
    double w = s->samples ? (double)alloc_bytes / (double)s->samples
             : s->live_samples > 0 ? (double)s->live_bytes / (double)s->live_samples
                                   : (double)a->sample_bytes;
    if (w < 1)
        w = 1;
    double epochs = g->window_last >= g->window_first
                        ? (double)(g->window_last - g->window_first + 1) : 1;
    double k = fabs(churn_fit_slope(&s->bytes_fit)) * epochs / w;
    double kept = s->live_samples < (int64_t)s->samples ? (double)s->live_samples
                                                         : (double)s->samples;
    if (k < kept)
        k = kept;
    return w * sqrt(1.2 * (k + 1)) / epochs;
}

double churn_report_bytes_se(const churn_analysis *a, double bytes, int64_t k)
{
    if (!a->sample_bytes)
        return 0;
    if (k <= 0) /* no sample: nothing seen, less than about a sample's worth there */
        return (double)a->sample_bytes;
    return fabs(bytes) / sqrt((double)k);
}

int churn_report_single_epoch(const churn_analysis *a)
{
    return a->first_epoch == a->last_epoch && !a->window.has_first && !a->window.has_last;
}

static int counter_named(const churn_analysis *a, const char *name)
{
    for (size_t i = 0; i < a->n_counter_names; i++)
        if (!strcmp(a->counter_names[i], name))
            return (int)i;
    return -1;
}

/* A counter's value in a row, 0 when the row does not have it. */
static uint64_t counter_value(int counter, const churn_epoch_row *r, const uint64_t *v)
{
    return counter >= 0 && (size_t)counter < r->n_counters ? v[counter] : 0;
}

int churn_report_untraced_of(const churn_analysis *a, churn_untraced *u)
{
    int warned = counter_named(a, "libchurn.untraced_warned");
    int bytes = counter_named(a, "libchurn.untraced_bytes");
    int module = counter_named(a, "libchurn.untraced_module");
    int engine = counter_named(a, "libchurn.untraced_engine");
    int allocator = counter_named(a, "libchurn.untraced_allocator");
    int runtime = counter_named(a, "libchurn.untraced_runtime");
    int file = counter_named(a, "libchurn.untraced_file");
    uint64_t culprit = 0;
    int said = 0;
    memset(u, 0, sizeof *u);
    for (size_t i = 0; warned >= 0 && i < a->epochs.count; i++) {
        const churn_epoch_row *r = &a->epochs.rows[i];
        const uint64_t *v = churn_epochs_counters(&a->epochs, r);
        if (!r->has_summary || !counter_value(warned, r, v))
            continue;
        said = 1;
        if (counter_value(bytes, r, v) > u->bytes)
            u->bytes = counter_value(bytes, r, v);
        if (counter_value(module, r, v))
            culprit = counter_value(module, r, v);
        if (counter_value(engine, r, v) && counter_value(engine, r, v) <= CHURN_N_ENGINES)
            u->engine = (int)counter_value(engine, r, v);
        uint64_t hidden = counter_value(allocator, r, v);
        if (hidden && hidden <= CHURN_N_HIDDEN_ALLOCATORS)
            u->allocator = (int)hidden;
        uint64_t own = counter_value(runtime, r, v);
        if (own && own <= CHURN_N_RUNTIME_HEAPS)
            u->runtime = (int)own;
        if (counter_value(file, r, v))
            u->file = 1;
    }
    /* A culprit among libchurn's own libraries (older shims named libunwind) is none. */
    for (size_t i = 0; culprit && i < a->modules.count; i++)
        if (a->modules.items[i].id == culprit - 1 &&
            !churn_own_library(a->modules.items[i].name))
            u->module = a->modules.items[i].name;
    return said;
}

int churn_report_untraced(const churn_analysis *a, char *buf, size_t len)
{
    churn_untraced u;
    if (!churn_report_untraced_of(a, &u))
        return 0;
    double most = (double)u.bytes / 1048576.0;
    const char *where = u.module;
    if (u.file)
        snprintf(buf, len,
                 "about %.1f MiB of RSS growth is not traced (the shim's estimate): most of it "
                 "is copy-on-write pages of a file the program mapped privately and wrote "
                 "(libchurn's stderr names it), the file's data changed in memory, which no "
                 "allocator holds",
                 most);
    else if (u.engine)
        snprintf(
            buf, len,
            "about %.1f MiB of RSS growth (the shim's estimate) is in mappings of %s's own "
            "heap%s%s (outside malloc by design: the 'outside' part of the RSS split); not "
            "traced: objects on %s",
            most, churn_engines[u.engine - 1].name, where ? ", in " : "", where ? where : "",
            churn_engines[u.engine - 1].heap);
    else if (u.runtime)
        snprintf(buf, len,
                 "about %.1f MiB of RSS growth is not traced (the shim's estimate): %s keeps "
                 "%s on memory of its own%s%s%s%s%s; %s in the environment sends them to "
                 "malloc, traced; every figure here misses them",
                 most, churn_runtime_heaps[u.runtime - 1].name,
                 churn_runtime_heaps[u.runtime - 1].objects, where ? ", in " : "",
                 where ? where : "",
                 churn_runtime_heaps[u.runtime - 1].traced ? ", not traced in this process (" : "",
                 churn_runtime_heaps[u.runtime - 1].traced ? churn_runtime_heaps[u.runtime - 1].traced
                                                           : "",
                 churn_runtime_heaps[u.runtime - 1].traced ? ")" : "",
                 churn_runtime_heaps[u.runtime - 1].setting);
    else if (u.allocator)
        snprintf(
            buf, len,
            "about %.1f MiB of RSS growth is not traced (the shim's estimate): the program "
            "holds memory through an allocator libchurn cannot trace, likely in %s, which "
            "carries %s without the names libchurn finds it by; every figure here misses "
            "it (libchurn's stderr names the mappings that grew)",
            most, where ? where : "the module the shim blamed",
            churn_hidden_allocators[u.allocator - 1].name);
    else
        snprintf(
            buf, len,
            "about %.1f MiB of RSS growth is not traced (the shim's estimate): the program "
            "holds memory through an allocator libchurn does not know%s%s; every figure "
            "here misses it (libchurn's stderr names the mappings that grew)",
            most, where ? ", likely in " : "", where ? where : "");
    return 1;
}

churn_report_debug *churn_report_debug_info(churn_analysis *a, size_t *n)
{
    *n = 0;
    if (!a->sym)
        return NULL;
    churn_module_debug *m = churn_symbolizer_debug_info(a->sym, n);
    churn_report_debug *d = churn_xcalloc(*n ? *n : 1, sizeof *d);
    const char **paths = churn_xcalloc(*n ? *n : 1, sizeof *paths);
    const char **packages = churn_xcalloc(*n ? *n : 1, sizeof *packages);
    size_t asked = 0;
    for (size_t i = 0; i < *n; i++) {
        d[i].m = m[i];
        if (m[i].from == CHURN_DEBUG_NONE)
            paths[asked++] = m[i].path;
    }
    churn_dbgsym_packages(paths, asked, packages);
    for (size_t i = 0, j = 0; i < *n; i++)
        if (m[i].from == CHURN_DEBUG_NONE)
            d[i].package = packages[j++];
    free(packages);
    free(paths);
    free(m);
    return d;
}

/* One line for the modules without debug info that Debian packages installed: the -dbgsym
   packages that carry it. */
static void debug_packages(churn_analysis *a)
{
    size_t n;
    churn_report_debug *d = churn_report_debug_info(a, &n);
    char *modules = NULL, *packages = NULL;
    size_t ml = 0, pl = 0, count = 0;
    FILE *mf = open_memstream(&modules, &ml), *pf = open_memstream(&packages, &pl);
    for (size_t i = 0; mf && pf && i < n; i++) {
        if (!d[i].package)
            continue;
        fprintf(mf, "%s%s", count ? ", " : "", base_of(d[i].m.path));
        fprintf(pf, "%s%s-dbgsym", count ? " " : "", d[i].package);
        count++;
    }
    if (mf)
        fclose(mf);
    if (pf)
        fclose(pf);
    if (count)
        churn_warn(a->warn,
                   "no debug info for %s: Debian's %s %s it (from Debian's debug archive), or "
                   "a debuginfod server does (DEBUGINFOD_URLS): file:line, and the names a "
                   "stripped module hides",
                   modules, packages, count > 1 ? "carry" : "carries");
    free(modules);
    free(packages);
    free(d);
}

void churn_report_collect_warnings(churn_analysis *a)
{
    char untraced[512];
    if (churn_report_untraced(a, untraced, sizeof untraced))
        churn_warn(a->warn, "%s", untraced);
    const char *const *lines;
    size_t n = churn_symbolizer_warnings(a->sym, &lines);
    for (size_t i = 0; i < n; i++)
        churn_warn(a->warn, "%s", lines[i]);
    debug_packages(a);
}

/* The epochs slopes and rankings are fitted over, and how to change them, in one line. */
void churn_report_steady_line(FILE *out, const churn_analysis *a)
{
    const churn_steady *s = &a->steady;
    char left[160] = "", exit_epoch[48] = "";
    if (s->has_exit_epoch)
        snprintf(exit_epoch, sizeof exit_epoch, "the exit's epoch %llu",
                 (unsigned long long)s->exit_epoch);
    fprintf(out, "Steady window: epochs %llu..%llu ", (unsigned long long)s->first,
            (unsigned long long)s->last);
    if (s->how == CHURN_STEADY_ALL) {
        fprintf(out, "(every epoch%s: --all-epochs)",
                s->has_exit_epoch ? " but the exit's" : "");
        return;
    }
    if (s->how == CHURN_STEADY_EPOCHS) {
        fputs("(--epochs)", out);
        return;
    }
    size_t n = 0;
    if (s->has_start_up)
        n += (size_t)snprintf(left + n, sizeof left - n, "start-up %llu..%llu",
                              (unsigned long long)s->start_up_first,
                              (unsigned long long)s->start_up_last);
    if (s->has_teardown && n < sizeof left)
        n += (size_t)snprintf(left + n, sizeof left - n, "%steardown %llu..%llu", n ? ", " : "",
                              (unsigned long long)s->teardown_first,
                              (unsigned long long)s->teardown_last);
    if (s->has_exit_epoch && n < sizeof left)
        snprintf(left + n, sizeof left - n, "%s%s", n ? " and " : "", exit_epoch);
    if (churn_steady_trims(s))
        fprintf(out, "(%s left out, found from live bytes and RSS)", left);
    else if (*exit_epoch)
        fprintf(out, "(no start-up or teardown found; %s left out)", exit_epoch);
    else
        fputs("(no start-up or teardown found)", out);
    fputs("; --epochs A:B sets another, --all-epochs takes every epoch", out);
}

static int word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("_.+-", c);
}

/* A warning with its paths and the words holding digits (numbers, build ids, file names with
   versions) left out: warnings alike but for them are one kind. */
static char *warning_kind(const char *w)
{
    char *k = churn_xmalloc(strlen(w) + 1), *o = k;
    for (const char *p = w; *p;) {
        if (*p == '/' && (p == w || strchr(" (,", p[-1]))) {
            while (*p && !strchr(" ),;", *p))
                p++;
            *o++ = '@';
        } else if (word_char(*p)) {
            const char *start = p;
            int digits = 0;
            for (; *p && word_char(*p); p++)
                digits |= *p >= '0' && *p <= '9';
            if (digits) {
                *o++ = '#';
            } else {
                memcpy(o, start, (size_t)(p - start));
                o += p - start;
            }
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    return k;
}

/* The first path a warning names, as its file name: what tells it from the others alike. */
static void warning_subject(const char *w, char *buf, size_t len)
{
    const char *p = w;
    while (*p && !(*p == '/' && (p == w || strchr(" (,", p[-1]))))
        p++;
    size_t n = strcspn(p, " ),;:");
    const char *base = p;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '/')
            base = p + i + 1;
    n -= (size_t)(base - p);
    snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), base);
}

char **churn_report_folded_warnings(const churn_warnings *w, size_t *n)
{
    char **kinds = churn_xcalloc(w->count ? w->count : 1, sizeof *kinds);
    char **out = churn_xcalloc(w->count ? w->count : 1, sizeof *out);
    size_t k = 0;
    for (size_t i = 0; i < w->count; i++)
        kinds[i] = warning_kind(w->lines[i]);
    for (size_t i = 0; i < w->count; i++) {
        if (!kinds[i])
            continue;
        char *line = NULL;
        size_t len = 0, alike = 0;
        FILE *f = open_memstream(&line, &len);
        if (!f) {
            fputs("churn-analyze: out of memory\n", stderr);
            exit(1);
        }
        fputs(w->lines[i], f);
        for (size_t j = i + 1; j < w->count; j++) {
            if (!kinds[j] || strcmp(kinds[i], kinds[j]))
                continue;
            char subject[128];
            warning_subject(w->lines[j], subject, sizeof subject);
            fprintf(f, "%s%s", alike++ ? ", " : "; and alike: ", subject);
            free(kinds[j]);
            kinds[j] = NULL;
        }
        fclose(f);
        free(kinds[i]);
        out[k++] = line;
    }
    free(kinds);
    *n = k;
    return out;
}

const char *churn_report_binary(double v, const char *unit, char *buf, size_t len)
{
    static const char *const prefix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
    int neg = v < 0;
    double m = neg ? -v : v;
    size_t u = 0;
    while (m >= 1024 && u + 1 < sizeof prefix / sizeof prefix[0]) {
        m /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%s%.0f%s", neg ? "-" : "", m, unit);
    else
        snprintf(buf, len, "%s%.1f%s%s", neg ? "-" : "", m, prefix[u], unit);
    return buf;
}
