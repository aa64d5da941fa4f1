#include "trends.h"

#include <stdlib.h>

#include "fit.h"
#include "util.h"

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
   Pearson's r a lot and this one hardly at all. */
static double rank_correlation(const churn_epochs *epochs, uint64_t last_epoch)
{
    pair_t *p = churn_xmalloc((epochs->count ? epochs->count : 1) * sizeof *p);
    size_t n = 0;
    for (size_t i = 0; i < epochs->count; i++) {
        const churn_epoch_row *r = &epochs->rows[i];
        if (r->epoch <= last_epoch && r->has_summary && r->has_live)
            p[n++] = (pair_t){(double)r->wall_ns, (double)r->live_bytes, 0, 0};
    }
    qsort(p, n, sizeof *p, by_wall);
    assign_ranks(p, n, 1);
    qsort(p, n, sizeof *p, by_live);
    assign_ranks(p, n, 0);
    churn_fit2 f = {0};
    for (size_t i = 0; i < n; i++)
        churn_fit2_add(&f, p[i].wall_rank, p[i].live_rank);
    free(p);
    return churn_fit2_correlation(&f);
}

churn_trends churn_trends_compute(const churn_epochs *epochs, uint64_t last_epoch)
{
    churn_fit live = {0}, rss = {0}, wall = {0};
    churn_fit2 wall_live = {0};
    for (size_t i = 0; i < epochs->count; i++) {
        const churn_epoch_row *r = &epochs->rows[i];
        if (r->epoch > last_epoch)
            continue;
        if (r->has_live)
            churn_fit_add_constant(&live, r->epoch, r->epoch, (double)r->live_bytes);
        if (!r->has_summary)
            continue;
        churn_fit_add_constant(&rss, r->epoch, r->epoch, (double)r->rss_bytes);
        churn_fit_add_constant(&wall, r->epoch, r->epoch, (double)r->wall_ns);
        if (r->has_live)
            churn_fit2_add(&wall_live, (double)r->wall_ns, (double)r->live_bytes);
    }
    return (churn_trends){
        churn_fit_slope(&live), churn_fit_r2(&live),
        churn_fit_slope(&rss),  churn_fit_r2(&rss),
        churn_fit_slope(&wall), churn_fit_r2(&wall),
        churn_fit2_correlation(&wall_live),
        rank_correlation(epochs, last_epoch),
    };
}
