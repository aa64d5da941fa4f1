#include "analyze/trends.h"

#include <stdlib.h>

#include "base/fit.h"
#include "base/util.h"

typedef struct {
    double wall, live;
    double wall_rank, live_rank;
} pair_t;

static int by_wall(const void *a, const void *b)
{
    double x = ((const pair_t *)a)->wall, y = ((const pair_t *)b)->wall;
    return (x > y) - (x < y);
}

static int by_live(const void *a, const void *b)
{
    double x = ((const pair_t *)a)->live, y = ((const pair_t *)b)->live;
    return (x > y) - (x < y);
}

/* Ranks 1..n along the sorted order, ties sharing their average rank. */
static void assign_ranks(pair_t *p, size_t n, int wall)
{
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && (wall ? p[j].wall == p[i].wall : p[j].live == p[i].live))
            j++;
        double rank = (double)(i + j + 1) / 2.0;
        for (size_t k = i; k < j; k++)
            *(wall ? &p[k].wall_rank : &p[k].live_rank) = rank;
        i = j;
    }
}

/* Spearman's rank correlation: a few epochs stretched by the scheduler on a busy machine move
   Pearson's r a lot and this one hardly at all.  Over the rows: epochs while they are one
   per row, else the buckets' means (churn_trends.rank_rows says how many). */
static double rank_correlation(const churn_epochs *epochs, uint64_t first_epoch,
                               uint64_t last_epoch, size_t *rows)
{
    pair_t *p = churn_xmalloc((epochs->count ? epochs->count : 1) * sizeof *p);
    size_t n = 0;
    for (size_t i = 0; i < epochs->count; i++) {
        const churn_epoch_row *r = &epochs->rows[i];
        if (r->epoch >= first_epoch && r->epoch <= last_epoch && r->has_summary && r->has_live)
            p[n++] = (pair_t){(double)r->wall_ns / (double)r->n_summary,
                              r->live_sum / (double)r->n_live, 0, 0};
    }
    qsort(p, n, sizeof *p, by_wall);
    assign_ranks(p, n, 1);
    qsort(p, n, sizeof *p, by_live);
    assign_ranks(p, n, 0);
    churn_fit2 f = {0};
    for (size_t i = 0; i < n; i++)
        churn_fit2_add(&f, p[i].wall_rank, p[i].live_rank);
    free(p);
    *rows = n;
    return churn_fit2_correlation(&f);
}

churn_trends churn_trends_compute(const churn_epochs *epochs, uint64_t first_epoch,
                                  uint64_t last_epoch)
{
    const churn_epoch_fits *f = &epochs->fits;
    churn_trends t = {
        churn_fit_slope(&f->live), churn_fit_r2(&f->live),
        churn_fit_slope(&f->rss),  churn_fit_r2(&f->rss),
        churn_fit_slope(&f->wall), churn_fit_r2(&f->wall),
        churn_fit2_correlation(&f->wall_live),
        0, 0, !churn_epochs_exact(epochs),
    };
    t.duration_vs_live_rank_correlation =
        rank_correlation(epochs, first_epoch, last_epoch, &t.rank_rows);
    return t;
}
