#include "live/view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/fragment.h"
#include "analyze/functions.h"
#include "analyze/trends.h"

const char *churn_view_bytes(double v, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double a = fabs(v);
    size_t u = 0;
    while (a >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        a /= 1024;
        v /= 1024;
        u++;
    }
    if (u)
        snprintf(buf, len, "%.1f%s", v, units[u]);
    else
        snprintf(buf, len, "%.0f%s", v, units[u]);
    return buf;
}

static void split(const churn_analysis *a, churn_view *v)
{
    const churn_fragmentation *f = &a->frag;
    if (!f->nrows)
        return;
    churn_frag_row r;
    uint64_t exit_epoch = a->has_exit ? a->last_epoch : UINT64_MAX;
    if (!churn_frag_last_read(f, exit_epoch, &r))
        churn_frag_row_at(f, f->nrows - 1, &r);
    int books = f->books != CHURN_BOOKS_NONE;
    v->has_split = 1;
    v->split_epoch = r.epoch;
    v->has_rss = r.has_rss;
    v->rss = r.rss_bytes;
    v->live = r.live_bytes;
    v->slack = r.slack_bytes;
    v->pinned = r.pinned_bytes;
    v->has_free = r.has_books;
    v->free_resident = r.free_resident_bytes;
    /* as the text report: RSS less the heap is said when it is a reading of that epoch */
    v->has_outside = r.has_rss && !r.rss_stale && !r.not_resident;
    v->outside_with_free = v->has_outside && churn_frag_outside_with_free(&r, books);
    v->outside = r.outside_heap_bytes;
    v->has_untraced = r.has_untraced;
    v->untraced = r.untraced_bytes;
    v->has_own = r.has_own;
    v->own = r.own_bytes;
}

/* As the reports name a function row: its name, or "module+0xoffset". */
static void fn_name(const churn_function *fn, char *buf, size_t len)
{
    if (fn->name)
        snprintf(buf, len, "%s", fn->name);
    else
        snprintf(buf, len, "%s+0x%llx", fn->module ? fn->module : "?",
                 (unsigned long long)fn->offset);
}

static void functions(churn_analysis *a, size_t top, churn_view *v)
{
    churn_functions_types(&a->functions, &a->growth, a->types);
    size_t n;
    churn_callsite **rows = churn_functions_sorted(&a->functions, top, &n);
    for (size_t i = 0; i < n; i++) {
        const churn_callsite *s = rows[i];
        const churn_function *fn = churn_functions_of(&a->functions, s);
        churn_view_fn *o = &v->fns[v->nfns++];
        fn_name(fn, o->name, sizeof o->name);
        snprintf(o->module, sizeof o->module, "%s", fn->module ? fn->module : "");
        snprintf(o->type, sizeof o->type, "%s", fn->type ? fn->type : "");
        snprintf(o->caller, sizeof o->caller, "%s", fn->caller ? fn->caller : "");
        churn_retained r = churn_functions_retention(&a->functions, s, a->has_exit);
        snprintf(o->retention, sizeof o->retention, "%s", churn_retention_name(r.kind));
        o->live_bytes = s->live_bytes;
        o->live_count = s->live_count;
        o->bytes_per_epoch = churn_fit_slope(&s->bytes_fit);
        o->allocs = fn->allocs;
        o->alloc_bytes = fn->alloc_bytes;
    }
    free(rows);
}

typedef struct take {
    size_t top;
} take;

static void compute(void *ctx, churn_analysis *a, FILE *out)
{
    const take *t = ctx;
    churn_view *v = calloc(1, sizeof *v);
    if (!v)
        return;
    v->first_epoch = a->first_epoch;
    v->last_epoch = a->last_epoch;
    v->live_bytes = a->live_bytes;
    v->live_count = a->live_count;
    v->allocs = a->totals.allocs;
    v->frees = a->totals.frees;
    v->alloc_bytes = a->totals.alloc_bytes;
    v->free_bytes = a->totals.free_bytes;
    v->dropped_events = a->totals.dropped_events;
    v->sample_bytes = a->sample_bytes;
    v->stack_sample = a->stack_sample;
    split(a, v);
    churn_trends tr = churn_trends_compute(&a->epochs, a->growth.window_first, a->growth.window_last);
    v->live_per_epoch = tr.live_bytes_per_epoch;
    v->live_r2 = tr.live_bytes_r2;
    v->rss_per_epoch = tr.rss_bytes_per_epoch;
    v->rss_r2 = tr.rss_bytes_r2;
    v->warnings = a->warn->count + a->warn->suppressed;
    functions(a, t->top, v);
    fwrite(v, sizeof *v, 1, out);
    free(v);
}

churn_follow_job *churn_view_start(churn_follow *f, size_t top, char *err, size_t errlen)
{
    /* the child gets its copy of t as the fork finds it */
    take t = {top > CHURN_VIEW_TOP_MAX ? CHURN_VIEW_TOP_MAX : top};
    return churn_follow_finish_start(f, compute, &t, err, errlen);
}

int churn_view_done(churn_follow_job *j, int wait, churn_view *v, char *err, size_t errlen)
{
    char *buf;
    size_t len;
    int rc = churn_follow_finish_done(j, wait, &buf, &len, err, errlen);
    if (rc <= 0)
        return rc;
    if (len != sizeof *v) {
        snprintf(err, errlen, "the analysis of the state gave %zu bytes, not a view", len);
        rc = -1;
    } else {
        memcpy(v, buf, sizeof *v);
    }
    free(buf);
    return rc;
}
