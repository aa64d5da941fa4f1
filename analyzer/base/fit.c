#include "base/fit.h"

#include <math.h>

void churn_fit_add_constant(churn_fit *f, uint64_t x_first, uint64_t x_last, double y)
{
    if (x_last < x_first)
        return;
    double nb = (double)(x_last - x_first) + 1.0;
    double mxb = ((double)x_first + (double)x_last) / 2.0;
    double m2xb = nb * (nb * nb - 1.0) / 12.0; /* consecutive integers */
    if (f->n == 0) {
        *f = (churn_fit){nb, mxb, y, m2xb, 0, 0};
        return;
    }
    double na = f->n, n = na + nb;
    double dx = mxb - f->mean_x, dy = y - f->mean_y;
    double w = na * nb / n;
    f->m2x += m2xb + dx * dx * w;
    f->m2y += dy * dy * w;
    f->cxy += dx * dy * w;
    f->mean_x += dx * nb / n;
    f->mean_y += dy * nb / n;
    f->n = n;
}

double churn_fit_slope(const churn_fit *f)
{
    return f->m2x > 0 ? f->cxy / f->m2x : 0.0;
}

double churn_fit_r2(const churn_fit *f)
{
    if (f->m2x <= 0 || f->m2y <= 0)
        return 0.0;
    double r2 = f->cxy * f->cxy / (f->m2x * f->m2y);
    return r2 > 1.0 ? 1.0 : r2;
}

/* Student's t at 97.5 % (two-sided 95 %) for 1..30 degrees of freedom; above 30, Fisher and
   Cornish's expansion in 1/df around the normal quantile, within 1e-4 of the exact value. */
static double t975(double df)
{
    static const double table[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                     2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                     2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                     2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    if (df < 30)
        return table[df < 1 ? 0 : (int)df - 1]; /* a fraction rounds down: the wider bound */
    double z = 1.959964, z2 = z * z;
    return z + z * (z2 + 1) / (4 * df) + z * ((5 * z2 + 16) * z2 + 3) / (96 * df * df) +
           z * (((3 * z2 + 19) * z2 + 17) * z2 - 15) / (384 * df * df * df);
}

double churn_fit_slope_bound_runs(const churn_fit *f, double rho)
{
    if (f->n < 3 || f->m2x <= 0)
        return -1.0;
    double residual = f->m2y - f->cxy * f->cxy / f->m2x; /* the squares the line leaves */
    if (residual < 0)
        residual = 0;
    double se2 = residual / (f->n - 2) / f->m2x, n = f->n;
    if (rho > 0) {
        if (rho > 0.5)
            rho = 0.5;
        se2 *= (1 + rho) / (1 - rho);
        n *= (1 - rho) / (1 + rho);
    }
    return t975(n - 2) * sqrt(se2);
}

double churn_fit_slope_bound(const churn_fit *f)
{
    return churn_fit_slope_bound_runs(f, 0);
}

double churn_fit_residual(const churn_fit *f, double x, double y)
{
    return y - f->mean_y - churn_fit_slope(f) * (x - f->mean_x);
}

void churn_fit2_add(churn_fit2 *f, double a, double b)
{
    f->n += 1;
    double da = a - f->mean_a, db = b - f->mean_b;
    f->mean_a += da / f->n;
    f->mean_b += db / f->n;
    f->m2a += da * (a - f->mean_a);
    f->m2b += db * (b - f->mean_b);
    f->cab += da * (b - f->mean_b);
}

double churn_fit2_correlation(const churn_fit2 *f)
{
    if (f->m2a <= 0 || f->m2b <= 0)
        return 0.0;
    double r = f->cab / sqrt(f->m2a * f->m2b);
    return r > 1.0 ? 1.0 : r < -1.0 ? -1.0 : r;
}
