/*
 * Progress on stderr for people watching a terminal: shown whenever stderr is a terminal,
 * whatever stdout is (a report redirected to a file is the long run someone waits for), once
 * the run has taken more than a moment.  Each line names its pass ("reading segments 12/40",
 * "symbolizing stacks 300/1200"); the line is erased before anything else is written.
 */
#ifndef CHURN_PROGRESS_H
#define CHURN_PROGRESS_H

#include <stddef.h>

typedef struct churn_progress {
    int enabled;
    int shown;      /* a line is on the terminal */
    int fresh;      /* a new pass: its first update past the delay is shown at once */
    char pass[160]; /* what is being done, "reading segments" */
    double start, last;
} churn_progress;

/* enabled 0: never shown (a pass nobody waits for: churn run's summary of a tree).  The
   delay counts from here: the caller makes one at its start. */
void churn_progress_init(churn_progress *p, int enabled);
/* Names the pass the next updates belong to. */
void churn_progress_pass(churn_progress *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* done of total. */
void churn_progress_update(churn_progress *p, size_t done, size_t total);
/* bytes so far, of a total not known. */
void churn_progress_bytes(churn_progress *p, size_t bytes);
/* Erases the line, so that what follows on the terminal starts clean. */
void churn_progress_done(churn_progress *p);

#endif
