#include "trends.h"

#include "fit.h"

churn_trends churn_trends_compute(const churn_epochs *epochs)
{
    churn_fit live = {0}, rss = {0}, wall = {0};
    churn_fit2 wall_live = {0};
    for (size_t i = 0; i < epochs->count; i++) {
        const churn_epoch_row *r = &epochs->rows[i];
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
    };
}
