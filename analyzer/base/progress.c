#include "base/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define PROGRESS_DELAY 0.5    /* seconds before the first line: short runs stay quiet */
#define PROGRESS_INTERVAL 0.2

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void churn_progress_init(churn_progress *p, int enabled)
{
    p->enabled = enabled && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
    p->shown = 0;
    p->start = p->last = p->enabled ? now() : 0;
}

void churn_progress_update(churn_progress *p, size_t done, size_t total)
{
    if (!p->enabled)
        return;
    double t = now();
    if (t - p->start < PROGRESS_DELAY || t - p->last < PROGRESS_INTERVAL)
        return;
    p->last = t;
    p->shown = 1;
    fprintf(stderr, "\rchurn-analyze: segment %zu/%zu (%.0f%%)", done, total,
            total ? 100.0 * (double)done / (double)total : 100.0);
    fflush(stderr);
}

void churn_progress_done(churn_progress *p)
{
    if (p->shown)
        fputs("\r\033[K", stderr);
    p->shown = 0;
}
