#include "base/progress.h"

#include <stdarg.h>
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
    p->enabled = enabled && isatty(STDERR_FILENO);
    p->shown = 0;
    p->fresh = 1;
    p->pass[0] = '\0';
    p->start = p->last = p->enabled ? now() : 0;
}

void churn_progress_pass(churn_progress *p, const char *fmt, ...)
{
    if (!p->enabled)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->pass, sizeof p->pass, fmt, ap);
    va_end(ap);
    p->fresh = 1;
}

/* Whether a line is due: past the delay, and the interval since the last one, unless the
   pass is new or at its end (last). */
static int due(churn_progress *p, int last)
{
    if (!p->enabled)
        return 0;
    double t = now();
    if (t - p->start < PROGRESS_DELAY ||
        (t - p->last < PROGRESS_INTERVAL && !p->fresh && !last))
        return 0;
    p->last = t;
    p->shown = 1;
    p->fresh = 0;
    return 1;
}

/* A pass's last update is shown too: a pass that ends between two lines would otherwise
   leave the line short of its end while the next, perhaps slower, one begins. */
void churn_progress_update(churn_progress *p, size_t done, size_t total)
{
    if (!due(p, done == total))
        return;
    fprintf(stderr, "\rchurn-analyze: %s %zu/%zu (%.0f%%)\033[K", p->pass, done, total,
            total ? 100.0 * (double)done / (double)total : 100.0);
    fflush(stderr);
}

void churn_progress_bytes(churn_progress *p, size_t bytes)
{
    if (!due(p, 0))
        return;
    fprintf(stderr, "\rchurn-analyze: %s %.1f MiB\033[K", p->pass, (double)bytes / 1048576.0);
    fflush(stderr);
}

void churn_progress_done(churn_progress *p)
{
    if (p->shown)
        fputs("\r\033[K", stderr);
    p->shown = 0;
}
