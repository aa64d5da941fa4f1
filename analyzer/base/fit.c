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
