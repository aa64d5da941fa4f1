#include "export/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static void add_leak(void *ctx, const churn_object *o)
{
    churn_export_window *w = ctx;
    churn_analysis *a = w->a;
    if (!churn_in_window(&a->window, o->epoch))
        return;
    double weight = churn_site_weightf(a, o->stack, o->size);
    if (weight == 0)
        return;
    /* The analysis already created the callsite of every object it counted as leaked. */
    churn_callsite *s = churn_growth_site(&a->growth, o->stack);
    size_t i = (size_t)(s - a->growth.sites);
    w->leaked_bytes[i] = churn_wrap_add(w->leaked_bytes[i], churn_scale(weight, o->size));
    w->leaked_count[i] = churn_wrap_add(w->leaked_count[i], churn_scale(weight, 1));
}

void churn_export_window_init(churn_export_window *w, churn_analysis *a,
                              const churn_live_pass *p)
{
    memset(w, 0, sizeof *w);
    w->a = a;
    /* Every callsite live at the peak had events, so it has a callsite; made here if not,
       before the arrays are sized. */
    size_t npeak = 0;
    churn_peak_row *peak = churn_peak_known(a) ? churn_peak_rows(a, 0, &npeak) : NULL;
    for (size_t k = 0; k < npeak; k++)
        churn_growth_site(&a->growth, peak[k].stack);
    size_t n = a->growth.count ? a->growth.count : 1;
    w->leaked_bytes = churn_xcalloc(n, sizeof *w->leaked_bytes);
    w->leaked_count = churn_xcalloc(n, sizeof *w->leaked_count);
    w->pinned_bytes = churn_xcalloc(n, sizeof *w->pinned_bytes);
    w->peak_bytes = churn_xcalloc(n, sizeof *w->peak_bytes);
    for (size_t k = 0; k < npeak; k++)
        w->peak_bytes[churn_growth_site(&a->growth, peak[k].stack) - a->growth.sites] =
            peak[k].bytes;
    free(peak);
    for (size_t k = 0; k < a->frag.nsites; k++) {
        const churn_frag_part *f = &a->frag.sites[k];
        size_t i = (size_t)(churn_growth_site(&a->growth, f->key) - a->growth.sites);
        double v = churn_frag_pinned(f);
        w->pinned_bytes[i] = v > 0 && v < 9e18 ? (int64_t)llround(v) : 0;
    }
    if (!a->events) {
        /* Summaries only: what the last summary left live is all there is. */
        for (size_t i = 0; i < a->growth.count; i++) {
            w->leaked_bytes[i] = a->growth.sites[i].live_bytes;
            w->leaked_count[i] = a->growth.sites[i].live_count;
        }
        return;
    }
    churn_liveset_foreach(&p->live, add_leak, w);
    /* As leaked_at_exit: the carried state counts only when the window is open at its start. */
    if (!a->window.has_first && a->carried_count > 0 && a->carried_bytes > 0)
        w->rest_leaked_bytes = a->carried_bytes;
}

void churn_export_window_free(churn_export_window *w)
{
    free(w->leaked_bytes);
    free(w->leaked_count);
    free(w->pinned_bytes);
    free(w->peak_bytes);
    memset(w, 0, sizeof *w);
}

static const churn_callsite *site_of(const churn_export_window *w, size_t i)
{
    return &w->a->growth.sites[i];
}

static int64_t alloc_bytes(const churn_export_window *w, size_t i)
{
    return (int64_t)site_of(w, i)->alloc_bytes;
}

static int64_t allocs(const churn_export_window *w, size_t i)
{
    return (int64_t)site_of(w, i)->allocs;
}

static int64_t live_bytes(const churn_export_window *w, size_t i)
{
    return site_of(w, i)->live_bytes;
}

static int64_t live_count(const churn_export_window *w, size_t i)
{
    return site_of(w, i)->live_count;
}

/* The fitted rise over the epochs of the window: bytes per epoch times the epochs sampled,
   so a callsite that leaks 48 bytes in each of 200 epochs shows 9600. */
static int64_t growth(const churn_export_window *w, size_t i)
{
    const churn_growth *g = &w->a->growth;
    if (g->window_last < g->window_first)
        return 0;
    double epochs = (double)(g->window_last - g->window_first + 1);
    double v = churn_fit_slope(&site_of(w, i)->bytes_fit) * epochs;
    return isfinite(v) && v > 0 && v < 9e18 ? (int64_t)llround(v) : 0;
}

/* Live before the teardown (growth.h's retention): the state a flame graph of "what is
   retained" should show when the exit's drain frees everything at the end. */
static int64_t retained(const churn_export_window *w, size_t i)
{
    churn_retained r =
        churn_growth_retention(&w->a->growth, site_of(w, i), churn_analysis_ending(w->a));
    return r.bytes;
}

static int64_t leaked(const churn_export_window *w, size_t i)
{
    return w->leaked_bytes[i];
}

static int64_t leaked_rest(const churn_export_window *w)
{
    return w->rest_leaked_bytes;
}

static int64_t pinned(const churn_export_window *w, size_t i)
{
    return w->pinned_bytes[i];
}

static int64_t peak(const churn_export_window *w, size_t i)
{
    return w->peak_bytes[i];
}

static int64_t temporary(const churn_export_window *w, size_t i)
{
    return (int64_t)site_of(w, i)->temporary;
}

const churn_metric churn_metrics[] = {
    {"alloc_bytes", "allocated bytes", "bytes", "alloc_space", alloc_bytes, NULL},
    {"allocs", "allocations", "objects", "alloc_objects", allocs, NULL},
    {"live_bytes", "live bytes at the end", "bytes", "inuse_space", live_bytes, NULL},
    {"live_count", "live objects at the end", "objects", "inuse_objects", live_count, NULL},
    {"retained", "live bytes before the teardown (the epoch the exit ended)", "bytes",
     "retained_space", retained, NULL},
    {"growth", "retained growth (bytes per epoch x epochs)", "bytes", "growth_space", growth,
     NULL},
    {"leaked", "leaked at exit (allocated in the window, live at its end)", "bytes",
     "leaked_space", leaked, leaked_rest},
    {"pinned", "span bytes pinned by survivors at the end (fragmentation)", "bytes",
     "pinned_space", pinned, NULL},
    {"peak", "live bytes at the peak (the heap's high-water mark)", "bytes", "peak_space", peak,
     NULL},
    {"temporary", "temporary allocations (freed before any other heap event)", "objects",
     "temporary_objects", temporary, NULL},
};
const size_t churn_metrics_count = sizeof churn_metrics / sizeof churn_metrics[0];

const churn_metric *churn_metric_find(const char *name)
{
    for (size_t i = 0; i < churn_metrics_count; i++)
        if (strcmp(churn_metrics[i].name, name) == 0)
            return &churn_metrics[i];
    return NULL;
}

int64_t churn_metric_site(const churn_metric *m, const churn_export_window *w, size_t site)
{
    int64_t v = m->site(w, site);
    return v > 0 ? v : 0;
}

int64_t churn_metric_rest(const churn_metric *m, const churn_export_window *w)
{
    int64_t v = m->rest ? m->rest(w) : 0;
    return v > 0 ? v : 0;
}

void churn_metric_fill(const churn_metric *m, const churn_export_window *w, churn_tree *t,
                       unsigned col, churn_progress *progress)
{
    churn_analysis *a = w->a;
    churn_frames_source src = {&a->stacks, a->sym};
    for (size_t i = 0; i < a->growth.count; i++) {
        churn_tree_add_stack(t, &src, a->growth.sites[i].stack, col, churn_metric_site(m, w, i));
        if (progress)
            churn_progress_update(progress, i + 1, a->growth.count);
    }
    churn_tree_add_frame(t, CHURN_REST_FRAME, col, churn_metric_rest(m, w));
}
