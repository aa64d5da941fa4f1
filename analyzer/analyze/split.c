#include "analyze/split.h"

#include <string.h>

#include "base/fit.h"

static int known(const churn_frag_row *r)
{
    return r->row && r->has_rss && !r->rss_stale && !r->not_resident;
}

static void parts_of(const churn_frag_row *r, double *v)
{
    v[CHURN_SPLIT_RSS] = (double)r->rss_bytes;
    v[CHURN_SPLIT_LIVE] = (double)r->live_bytes;
    v[CHURN_SPLIT_SLACK] = (double)r->slack_bytes;
    v[CHURN_SPLIT_PINNED] = (double)r->pinned_bytes;
    v[CHURN_SPLIT_FREE] = (double)r->free_resident_bytes;
    v[CHURN_SPLIT_OVERHEAD] = (double)r->residual_bytes;
    v[CHURN_SPLIT_OUTSIDE] = (double)r->outside_heap_bytes;
    v[CHURN_SPLIT_LIBCHURN] = r->has_own ? (double)r->own_bytes : 0;
    v[CHURN_SPLIT_MAPPED] = (double)r->mapped_bytes;
}

/* The parts, then outside less the program's mappings (what "not traced" is fitted as). */
#define SERIES (CHURN_SPLIT_PARTS + 1)

static void series_of(const churn_frag_row *r, double *v)
{
    parts_of(r, v);
    v[CHURN_SPLIT_PARTS] = v[CHURN_SPLIT_OUTSIDE] - v[CHURN_SPLIT_MAPPED];
}

static int fitted(const churn_frag_row *r, uint64_t first, uint64_t last, int books)
{
    return r->epoch >= first && r->epoch <= last && known(r) && (!books || r->has_books);
}

churn_split churn_split_fit(const churn_fragmentation *f, uint64_t first, uint64_t last)
{
    churn_split s;
    memset(&s, 0, sizeof s);
    size_t with_books = 0, all = 0;
    churn_frag_row r, end;
    for (size_t i = 0; i < f->nrows; i++) {
        churn_frag_row_at(f, i, &r);
        if (r.epoch < first || r.epoch > last || !known(&r))
            continue;
        all++;
        with_books += r.has_books;
        end = r;
    }
    if (!all)
        return s;
    int books = with_books >= 2;
    if ((books ? with_books : all) < 2) {
        s.levels = 1;
        s.epochs = 1;
        s.first = s.last = end.epoch;
        s.free_with_outside = !end.has_books;
        parts_of(&end, s.v);
        return s;
    }
    s.free_with_outside = !books;
    churn_fit fits[SERIES];
    memset(fits, 0, sizeof fits);
    double v[SERIES];
    for (size_t i = 0; i < f->nrows; i++) {
        churn_frag_row_at(f, i, &r);
        if (!fitted(&r, first, last, books))
            continue;
        series_of(&r, v);
        for (size_t k = 0; k < SERIES; k++)
            churn_fit_add_constant(&fits[k], r.epoch, r.epoch, v[k]);
        if (!s.epochs++)
            s.first = r.epoch;
        s.last = r.epoch;
    }
    /* the residuals' lag-1 autocorrelation, neighbours in epoch order */
    double lagged[SERIES] = {0}, squares[SERIES] = {0}, before[SERIES];
    for (size_t i = 0, n = 0; i < f->nrows; i++) {
        churn_frag_row_at(f, i, &r);
        if (!fitted(&r, first, last, books))
            continue;
        series_of(&r, v);
        for (size_t k = 0; k < SERIES; k++) {
            double e = churn_fit_residual(&fits[k], (double)r.epoch, v[k]);
            lagged[k] += n ? before[k] * e : 0;
            squares[k] += e * e;
            before[k] = e;
        }
        n++;
    }
    for (size_t k = 0; k < SERIES; k++) {
        double rho = squares[k] > 0 ? lagged[k] / squares[k] : 0;
        double bound = churn_fit_slope_bound_runs(&fits[k], rho);
        if (k < CHURN_SPLIT_PARTS) {
            s.v[k] = churn_fit_slope(&fits[k]);
            s.bound[k] = bound;
        } else
            s.unmapped_bound = bound;
    }
    return s;
}
