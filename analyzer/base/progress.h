/*
 * Progress on stderr while segments are read, for people watching a terminal: shown only
 * when both stdout and stderr are terminals and the run takes more than a moment.
 */
#ifndef CHURN_PROGRESS_H
#define CHURN_PROGRESS_H

#include <stddef.h>

typedef struct churn_progress {
    int enabled;
    int shown;
    double start, last;
} churn_progress;

void churn_progress_init(churn_progress *p, int enabled);
void churn_progress_update(churn_progress *p, size_t done, size_t total);
void churn_progress_done(churn_progress *p);

#endif
