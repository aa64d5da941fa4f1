#include "report/diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/fit.h"
#include "base/util.h"

static const char *const part_names[CHURN_DIFF_PARTS] = {
    "rss", "live", "slack", "pinned", "free_resident", "outside", "untraced",
};

const char *churn_diff_part_name(enum churn_diff_part p)
{
    return part_names[p];
}

/* Each part over the epochs of the fit window (the steady window, or the one --epochs names)
   that had a reading of it, as the text report's table shows them
   (report_text.c, frag_row): without a reading of the allocator's books, what it keeps free
   and what is outside it are not told apart, and neither is fitted. */
static void parts_of(const churn_analysis *a, churn_diff_parts *p)
{
    const churn_fragmentation *f = &a->frag;
    churn_fit fit[CHURN_DIFF_PARTS];
    memset(fit, 0, sizeof fit);
    memset(p, 0, sizeof *p);
    int books = f->books != CHURN_BOOKS_NONE;
    for (size_t i = 0; i < f->nrows; i++) {
        churn_frag_row r;
        churn_frag_row_at(f, i, &r);
        if (r.epoch > a->growth.window_last)
            break;
        if (r.epoch < a->growth.window_first) /* before the steady window: start-up */
            continue;
        int rss = r.has_rss && !r.rss_stale && !r.not_resident;
        double v[CHURN_DIFF_PARTS] = {
            [CHURN_PART_RSS] = (double)r.rss_bytes,
            [CHURN_PART_LIVE] = (double)r.live_bytes,
            [CHURN_PART_SLACK] = (double)r.slack_bytes,
            [CHURN_PART_PINNED] = (double)r.pinned_bytes,
            [CHURN_PART_FREE_RESIDENT] = (double)r.free_resident_bytes,
            [CHURN_PART_OUTSIDE] = (double)r.outside_heap_bytes,
            [CHURN_PART_UNTRACED] = (double)r.untraced_bytes,
        };
        int has[CHURN_DIFF_PARTS] = {
            [CHURN_PART_RSS] = rss,
            [CHURN_PART_LIVE] = 1,
            [CHURN_PART_SLACK] = 1,
            [CHURN_PART_PINNED] = 1,
            [CHURN_PART_FREE_RESIDENT] = r.has_books,
            [CHURN_PART_OUTSIDE] = rss && !churn_frag_outside_with_free(&r, books),
            [CHURN_PART_UNTRACED] = r.has_untraced,
        };
        for (int k = 0; k < CHURN_DIFF_PARTS; k++)
            if (has[k])
                churn_fit_add_constant(&fit[k], r.epoch, r.epoch, v[k]);
    }
    for (int k = 0; k < CHURN_DIFF_PARTS; k++) {
        p->known[k] = fit[k].n >= 2;
        p->per_epoch[k] = p->known[k] ? churn_fit_slope(&fit[k]) : 0;
    }
}

/* A run's function rows, keyed for matching. */
typedef struct keyed {
    char *function;
    const char *module;
    churn_diff_figures fig;
} keyed;

static int keyed_cmp(const void *x, const void *y)
{
    const keyed *a = x, *b = y;
    int c = strcmp(a->function, b->function);
    return c ? c : strcmp(a->module ? a->module : "", b->module ? b->module : "");
}

static keyed *rows_of(churn_analysis *a, churn_suppressions *sup, size_t *n)
{
    churn_frames_source src = {&a->stacks, a->sym};
    churn_suppressions_apply(sup, &a->growth, &src);
    churn_report_options all = {NULL, 0, sup};
    churn_callsite **rows = churn_report_functions(a, &all, n);
    keyed *k = churn_xcalloc(*n ? *n : 1, sizeof *k);
    enum churn_ending ended = churn_analysis_ending(a);
    for (size_t i = 0; i < *n; i++) {
        const churn_callsite *s = rows[i];
        const churn_function *fn = churn_functions_of(&a->functions, s);
        char label[256];
        if (!fn->name)
            snprintf(label, sizeof label, "%s+0x%llx", fn->module ? fn->module : "?",
                     (unsigned long long)fn->offset);
        k[i].function = churn_xstrdup(fn->name ? fn->name : label);
        k[i].module = fn->module;
        churn_diff_figures *f = &k[i].fig;
        f->present = 1;
        f->bytes_per_epoch = churn_fit_slope(&s->bytes_fit);
        f->live_bytes = s->live_bytes;
        f->live_count = s->live_count;
        f->allocs = fn->allocs;
        f->alloc_bytes = fn->alloc_bytes;
        f->retention = churn_functions_retention(&a->functions, s, ended).kind;
    }
    free(rows);
    qsort(k, *n, sizeof *k, keyed_cmp);
    return k;
}

/* Changes smaller than this many bytes per epoch are the fits' rounding, not a change. */
#define GROWTH_EPSILON 1e-6

static double growth_change(const churn_diff_row *r)
{
    return r->new.bytes_per_epoch - r->old.bytes_per_epoch;
}

static int changed(const churn_diff_row *r)
{
    return fabs(growth_change(r)) > GROWTH_EPSILON || r->old.live_bytes != r->new.live_bytes ||
           r->old.live_count != r->new.live_count || r->old.allocs != r->new.allocs ||
           r->old.alloc_bytes != r->new.alloc_bytes || r->old.present != r->new.present;
}

static int64_t abs64(int64_t v)
{
    return v < 0 ? -v : v;
}

/* Changed rows first; then the largest change in growth, in live bytes, in bytes
   allocated; then by name. */
static int row_cmp(const void *x, const void *y)
{
    const churn_diff_row *a = x, *b = y;
    int ca = changed(a), cb = changed(b);
    if (ca != cb)
        return cb - ca;
    double ga = fabs(growth_change(a)), gb = fabs(growth_change(b));
    if (fabs(ga - gb) > GROWTH_EPSILON)
        return ga < gb ? 1 : -1;
    int64_t la = abs64(a->new.live_bytes - a->old.live_bytes);
    int64_t lb = abs64(b->new.live_bytes - b->old.live_bytes);
    if (la != lb)
        return la < lb ? 1 : -1;
    int64_t aa = abs64((int64_t)(a->new.alloc_bytes - a->old.alloc_bytes));
    int64_t ab = abs64((int64_t)(b->new.alloc_bytes - b->old.alloc_bytes));
    if (aa != ab)
        return aa < ab ? 1 : -1;
    return strcmp(a->function, b->function);
}

void churn_diff_build(churn_diff *d, const char *old_path, churn_analysis *old,
                      const char *new_path, churn_analysis *new, churn_suppressions *s)
{
    memset(d, 0, sizeof *d);
    d->old_path = old_path;
    d->new_path = new_path;
    d->old = old;
    d->new = new;
    parts_of(old, &d->old_parts);
    parts_of(new, &d->new_parts);
    size_t no, nn;
    keyed *ko = rows_of(old, s, &no), *kn = rows_of(new, s, &nn);
    d->rows = churn_xcalloc(no + nn + 1, sizeof *d->rows);
    size_t i = 0, j = 0;
    while (i < no || j < nn) {
        int c = i == no ? 1 : j == nn ? -1 : keyed_cmp(&ko[i], &kn[j]);
        churn_diff_row *r = &d->rows[d->n++];
        const keyed *k = c <= 0 ? &ko[i] : &kn[j];
        r->function = k->function;
        r->module = k->module;
        if (c <= 0)
            r->old = ko[i++].fig;
        if (c >= 0) {
            r->new = kn[j].fig;
            if (c == 0)
                free(kn[j].function);
            j++;
        }
    }
    free(ko);
    free(kn);
    qsort(d->rows, d->n, sizeof *d->rows, row_cmp);
    while (d->changed < d->n && changed(&d->rows[d->changed]))
        d->changed++;
}

void churn_diff_free(churn_diff *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->rows[i].function);
    free(d->rows);
    memset(d, 0, sizeof *d);
}
