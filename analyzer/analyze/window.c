#include "analyze/window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* Residuals further than this many robust standard deviations from the line are outliers. */
#define OUTLIER_SIGMAS 4.0
/* A deviation under this share of the series' typical size is never an outlier, so that a
   series that fits its line exactly does not call its least wobble a start-up. */
#define FLOOR_SHARE (1.0 / 64)
#define LIVE_FLOOR 64.0         /* bytes */
#define RSS_FLOOR (64.0 * 1024) /* RSS moves by pages, and allocators trim by more */

typedef struct point {
    double x, y;
} point;

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n), reordering it. */
static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* How many points to trim at the start and at the end of p[0..n). */
static void trim(const point *p, size_t n, double floor_abs, size_t *head, size_t *tail)
{
    double *v = churn_xmalloc(n * sizeof *v);
    size_t half = n / 2;
    for (size_t i = 0; i + half < n; i++)
        v[i] = (p[i + half].y - p[i].y) / (p[i + half].x - p[i].x);
    double slope = median(v, n - half);
    for (size_t i = 0; i < n; i++)
        v[i] = p[i].y - slope * p[i].x;
    double intercept = median(v, n);
    for (size_t i = 0; i < n; i++)
        v[i] = fabs(p[i].y - (intercept + slope * p[i].x));
    double sigma = 1.4826 * median(v, n); /* the MAD of a normal law is 0.6745 sigma */
    for (size_t i = 0; i < n; i++)
        v[i] = fabs(p[i].y);
    double typical = median(v, n);
    free(v);
    double tolerance = OUTLIER_SIGMAS * sigma;
    if (tolerance < typical * FLOOR_SHARE)
        tolerance = typical * FLOOR_SHARE;
    if (tolerance < floor_abs)
        tolerance = floor_abs;
    size_t limit = n / 4;
    *head = *tail = 0;
    while (*head < limit && fabs(p[*head].y - (intercept + slope * p[*head].x)) > tolerance)
        (*head)++;
    while (*tail < limit &&
           p[n - 1 - *tail].y - (intercept + slope * p[n - 1 - *tail].x) < -tolerance)
        (*tail)++;
}

/* One series' window as epochs [*first, *last]: left alone with too few points. */
static void series_window(const churn_epochs *t, uint64_t first, uint64_t last, int rss,
                          uint64_t *from, uint64_t *to)
{
    point *p = churn_xmalloc((t->count ? t->count : 1) * sizeof *p);
    size_t *row = churn_xmalloc((t->count ? t->count : 1) * sizeof *row);
    size_t n = 0;
    for (size_t i = 0; i < t->count; i++) {
        const churn_epoch_row *r = &t->rows[i];
        if (r->epoch < first || r->last > last || !(rss ? r->has_summary : r->has_live))
            continue;
        uint64_t at = rss ? r->summary_epoch : r->live_epoch;
        p[n] =
            (point){(double)(at - first), rss ? (double)r->rss_bytes : (double)r->live_bytes};
        row[n++] = i;
    }
    if (n >= CHURN_STEADY_MIN) {
        size_t head, tail;
        trim(p, n, rss ? RSS_FLOOR : LIVE_FLOOR, &head, &tail);
        if (head && t->rows[row[head]].epoch > *from)
            *from = t->rows[row[head]].epoch;
        if (tail && t->rows[row[n - 1 - tail]].last < *to)
            *to = t->rows[row[n - 1 - tail]].last;
    }
    free(p);
    free(row);
}

churn_steady churn_steady_find(const churn_epochs *t, uint64_t first, uint64_t last)
{
    churn_steady s;
    memset(&s, 0, sizeof s);
    s.how = CHURN_STEADY_FOUND;
    s.first = first;
    s.last = last;
    if (last <= first)
        return s;
    series_window(t, first, last, 0, &s.first, &s.last);
    series_window(t, first, last, 1, &s.first, &s.last);
    s.has_start_up = s.first > first;
    s.start_up_first = first;
    s.start_up_last = s.first - 1;
    s.has_teardown = s.last < last;
    s.teardown_first = s.last + 1;
    s.teardown_last = last;
    return s;
}

int churn_steady_common(const churn_steady *a, const churn_steady *b, churn_steady *common)
{
    if (a->how != CHURN_STEADY_FOUND || b->how != CHURN_STEADY_FOUND ||
        (a->first == b->first && a->last == b->last))
        return 0;
    uint64_t first = a->first > b->first ? a->first : b->first;
    uint64_t last = a->last < b->last ? a->last : b->last;
    if (first > last)
        return 0;
    /* what either run's fits would have taken, before its own start-up and teardown */
    uint64_t from = a->has_start_up ? a->start_up_first : a->first;
    uint64_t b_from = b->has_start_up ? b->start_up_first : b->first;
    uint64_t to = a->has_teardown ? a->teardown_last : a->last;
    uint64_t b_to = b->has_teardown ? b->teardown_last : b->last;
    from = b_from < from ? b_from : from;
    to = b_to > to ? b_to : to;
    *common = *a;
    common->first = first;
    common->last = last;
    common->has_start_up = first > from;
    common->start_up_first = from;
    common->start_up_last = first - 1;
    common->has_teardown = last < to;
    common->teardown_first = last + 1;
    common->teardown_last = to;
    return 1;
}
