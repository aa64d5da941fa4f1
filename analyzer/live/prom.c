#include "live/prom.h"

#include <math.h>
#include <string.h>

/* A label value: backslash, double quote and newline escaped. */
static void label_value(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fprintf(out, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
    fputc('"', out);
}

static void labels(FILE *out, const churn_prom_proc *p, const char *key, const char *value,
                   const char *key2, const char *value2)
{
    if (p->pid)
        fprintf(out, "{pid=\"%llu\",executable=", (unsigned long long)p->pid);
    else
        fputs("{pid=\"\",executable=", out);
    label_value(out, p->exe);
    fputs(",trace=", out);
    label_value(out, p->trace);
    if (key) {
        fprintf(out, ",%s=", key);
        label_value(out, value);
    }
    if (key2) {
        fprintf(out, ",%s=", key2);
        label_value(out, value2);
    }
    fputc('}', out);
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void value(FILE *out, double v)
{
    if (isfinite(v))
        fprintf(out, " %.17g\n", v);
    else
        fputs(" NaN\n", out);
}

/* A figure of every process with a view (has: whether this one has it). */
typedef int (*figure_fn)(const churn_prom_proc *p, double *v);

static void figure(FILE *out, const churn_prom_proc *procs, size_t n, const char *name,
                   const char *type, const char *help, figure_fn fn)
{
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        double v;
        if (!fn(&procs[i], &v))
            continue;
        if (!any++)
            family(out, name, type, help);
        fputs(name, out);
        labels(out, &procs[i], NULL, NULL, NULL, NULL);
        value(out, v);
    }
}

#define VIEW_FIGURE(fname, expr)                                                               \
    static int fname(const churn_prom_proc *p, double *v)                                      \
    {                                                                                          \
        if (!p->view)                                                                          \
            return 0;                                                                          \
        const churn_view *w = p->view;                                                         \
        (void)w;                                                                               \
        *v = (double)(expr);                                                                   \
        return 1;                                                                              \
    }

VIEW_FIGURE(live_bytes, w->live_bytes)
VIEW_FIGURE(live_objects, w->live_count)
VIEW_FIGURE(allocations, w->allocs)
VIEW_FIGURE(frees, w->frees)
VIEW_FIGURE(allocated_bytes, w->alloc_bytes)
VIEW_FIGURE(freed_bytes, w->free_bytes)
VIEW_FIGURE(epoch, w->last_epoch)
VIEW_FIGURE(live_slope, w->live_per_epoch)
VIEW_FIGURE(rss_slope, w->rss_per_epoch)
VIEW_FIGURE(dropped, w->dropped_events)

static int rss_epoch(const churn_prom_proc *p, double *v)
{
    if (!p->view || !p->view->has_split)
        return 0;
    *v = (double)p->view->split_epoch;
    return 1;
}
VIEW_FIGURE(sample_bytes, w->sample_bytes)

static int rss(const churn_prom_proc *p, double *v)
{
    if (!p->view || !p->view->has_split || !p->view->has_rss)
        return 0;
    *v = (double)p->view->rss;
    return 1;
}

static int readable(const churn_prom_proc *p, double *v)
{
    *v = p->readable;
    return 1;
}

static int running(const churn_prom_proc *p, double *v)
{
    if (!p->readable)
        return 0;
    *v = p->running;
    return 1;
}

static int lost(const churn_prom_proc *p, double *v)
{
    if (!p->readable)
        return 0;
    *v = (double)p->lost_segments;
    return 1;
}

static int restarts(const churn_prom_proc *p, double *v)
{
    if (!p->readable)
        return 0;
    *v = (double)p->restarts;
    return 1;
}

static void parts(FILE *out, const churn_prom_proc *procs, size_t n)
{
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        const churn_view *w = procs[i].view;
        if (!w || !w->has_split)
            continue;
        struct {
            const char *part;
            int has;
            double v;
        } rows[] = {
            {"live", 1, (double)w->live},
            {"slack", 1, (double)w->slack},
            {"pinned", 1, (double)w->pinned},
            {"free_resident", w->has_free, (double)w->free_resident},
            {"outside", w->has_outside && !w->outside_with_free, (double)w->outside},
            {"free_resident_and_outside", w->has_outside && w->outside_with_free,
             (double)w->outside},
            {"not_traced", w->has_untraced, (double)w->untraced},
            {"libchurn", w->has_own, (double)w->own},
        };
        for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
            if (!rows[k].has)
                continue;
            if (!any++)
                family(
                    out, "churn_rss_part_bytes", "gauge",
                    "The process's resident memory by part, at the newest epoch with an RSS "
                    "reading (docs/fragmentation.md): live requested bytes, allocator slack, "
                    "bytes pinned in partly used spans, free memory the allocator keeps "
                    "resident, memory outside the allocator, of which not traced, and "
                    "libchurn's own.");
            fputs("churn_rss_part_bytes", out);
            labels(out, &procs[i], "part", rows[k].part, NULL, NULL);
            value(out, rows[k].v);
        }
    }
}

/* Function series: at most the view's top rows per process, each (function, module) once. */
static void functions(FILE *out, const churn_prom_proc *procs, size_t n, int growth)
{
    const char *name =
        growth ? "churn_function_growth_bytes_per_epoch" : "churn_function_live_bytes";
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        const churn_view *w = procs[i].view;
        if (!w)
            continue;
        for (size_t k = 0; k < w->nfns; k++) {
            const churn_view_fn *fn = &w->fns[k];
            int seen = 0;
            for (size_t j = 0; j < k && !seen; j++)
                seen =
                    !strcmp(w->fns[j].name, fn->name) && !strcmp(w->fns[j].module, fn->module);
            if (seen)
                continue;
            if (!any++)
                family(out, name, "gauge",
                       growth ? "The growth of a top function's live bytes per epoch (least "
                                "squares over the epochs read), of the functions that grow "
                                "most."
                              : "Live bytes of a top function (its callsites' sum), of the "
                                "functions that grow most.");
            fputs(name, out);
            labels(out, &procs[i], "function", fn->name, "module", fn->module);
            value(out, growth ? fn->bytes_per_epoch : (double)fn->live_bytes);
        }
    }
}

void churn_prom_write(FILE *out, const churn_prom_proc *procs, size_t n)
{
    figure(out, procs, n, "churn_trace_readable", "gauge",
           "1 when the process's trace is read, 0 when it cannot be (yet): no segment, not a "
           "trace, damaged.",
           readable);
    figure(out, procs, n, "churn_process_running", "gauge",
           "1 while the process runs as far as its trace tells, 0 once it ended.", running);
    figure(out, procs, n, "churn_rss_bytes", "gauge",
           "Resident memory at the newest epoch with a reading.", rss);
    parts(out, procs, n);
    figure(out, procs, n, "churn_rss_epoch", "gauge",
           "The epoch whose end churn_rss_bytes and churn_rss_part_bytes describe.", rss_epoch);
    figure(out, procs, n, "churn_live_bytes", "gauge",
           "Bytes the program requested and has not freed, as read so far.", live_bytes);
    figure(out, procs, n, "churn_live_objects", "gauge", "Objects allocated and not freed.",
           live_objects);
    figure(out, procs, n, "churn_allocations_total", "counter",
           "Allocations since the follow began (since its last restart).", allocations);
    figure(out, procs, n, "churn_frees_total", "counter", "Frees since the follow began.",
           frees);
    figure(out, procs, n, "churn_allocated_bytes_total", "counter",
           "Bytes allocated since the follow began.", allocated_bytes);
    figure(out, procs, n, "churn_freed_bytes_total", "counter",
           "Bytes freed since the follow began.", freed_bytes);
    figure(out, procs, n, "churn_epoch", "gauge", "The newest epoch the trace reached.", epoch);
    figure(out, procs, n, "churn_live_growth_bytes_per_epoch", "gauge",
           "Least-squares growth of live bytes per epoch over the epochs read.", live_slope);
    figure(out, procs, n, "churn_rss_growth_bytes_per_epoch", "gauge",
           "Least-squares growth of RSS per epoch over the epochs read.", rss_slope);
    functions(out, procs, n, 0);
    functions(out, procs, n, 1);
    figure(out, procs, n, "churn_dropped_events_total", "counter",
           "Events the shim dropped and counted in the trace.", dropped);
    figure(
        out, procs, n, "churn_sample_bytes", "gauge",
        "CHURN_SAMPLE_BYTES of the trace: the mean bytes between sampled allocations, 0 when "
        "every allocation is traced.",
        sample_bytes);
    figure(out, procs, n, "churn_segments_lost_total", "counter",
           "Trace segments the ring overwrote before they were read.", lost);
    figure(out, procs, n, "churn_follow_restarts_total", "counter",
           "Times the state started over from a later segment's carry.", restarts);
}
