/*
 * Least-squares line through points (x, y), fed in blocks of consecutive integer x with a
 * constant y, so a series that changes rarely costs O(changes), not O(points).  Blocks are
 * merged with the pairwise mean/co-moment update (Chan et al.), which stays accurate where
 * the textbook sums of x*y and y*y would cancel catastrophically.
 */
#ifndef CHURN_FIT_H
#define CHURN_FIT_H

#include <stdint.h>

typedef struct churn_fit {
    double n;
    double mean_x, mean_y;
    double m2x, m2y, cxy; /* sums of squared deviations and of the co-deviation */
} churn_fit;

/* Adds the points (x, y) for every integer x in [x_first, x_last]. */
void churn_fit_add_constant(churn_fit *f, uint64_t x_first, uint64_t x_last, double y);

double churn_fit_slope(const churn_fit *f);  /* 0 with fewer than two distinct x */
double churn_fit_r2(const churn_fit *f);     /* 0 when y is constant or x has no spread */

/* The bound of the slope: half the width of its 95 % confidence interval, Student's t with
   n - 2 degrees of freedom times the slope's standard error (the residuals' spread over the
   spread of x), taking the points' distances from the line as independent noise.  -1 with
   fewer than three points: two points leave no residual to measure the noise by. */
double churn_fit_slope_bound(const churn_fit *f);

/* The same for points whose distances from the line go in runs, rho their lag-1
   autocorrelation: the slope's variance grows by (1 + rho) / (1 - rho) and the points count
   as n (1 - rho) / (1 + rho) (rho <= 0: churn_fit_slope_bound's).  rho counts at most 0.5:
   longer runs are the shape of a growth that curves more than noise about it, and the
   correction would call node's RSS growing from 32 to 138 MiB unmeasurable (docs/analyzer.md). */
double churn_fit_slope_bound_runs(const churn_fit *f, double rho);

/* A point's distance from the line. */
double churn_fit_residual(const churn_fit *f, double x, double y);

/* A fit of two paired series (a, b) sampled at the same points, for correlation. */
typedef struct churn_fit2 {
    double n, mean_a, mean_b, m2a, m2b, cab;
} churn_fit2;

void churn_fit2_add(churn_fit2 *f, double a, double b);
double churn_fit2_correlation(const churn_fit2 *f);

#endif
