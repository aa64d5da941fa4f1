/*
 * One process image followed while it runs: its trace read as it is written (tail.h) into
 * the same analysis the offline analyzer makes (analysis.h, livepass.h, spans.h), kept for
 * as long as the process runs.  Memory holds the live set, the stack table and the
 * analysis's tables, which are bounded (the epochs table merges rows, span snapshots merge
 * likewise), never the events read: the ring may go round any number of times.
 *
 * Figures that the analyzer computes only at the end of a trace (growth fits sampled to the
 * last epoch, retention, the fragmentation table) come from churn_follow_finished: a child
 * process, forked from the follower, finishes its copy of the state as churn-analyze
 * finishes a trace and hands back what it computed; the follower's own state goes on
 * untouched.  They are so the offline analysis's figures of what was read, by construction.
 *
 * The end of the process: its EXIT record (normal, _exit, a fatal signal, exec, detach), or,
 * without one, the file no longer changing while the pid no longer holds it open (kill -9,
 * the OOM killer, an exit_group made inline).
 */
#ifndef CHURN_LIVE_FOLLOW_H
#define CHURN_LIVE_FOLLOW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyze/analysis.h"
#include "live/tail.h"

typedef struct churn_follow churn_follow;

enum churn_follow_state {
    CHURN_FOLLOW_WAITING, /* no segment read yet (churn_follow_why says what is missing) */
    CHURN_FOLLOW_RUNNING, /* the process writes on, as far as the trace tells */
    CHURN_FOLLOW_ENDED,   /* the image ended (churn_follow_end says how) */
    CHURN_FOLLOW_FAILED,  /* the file cannot be followed (churn_follow_why says why) */
};

/* How an image ended. */
enum churn_follow_how {
    CHURN_FOLLOW_EXIT,     /* its EXIT record: how and detail are the record's */
    CHURN_FOLLOW_GONE,     /* no EXIT record, and the process is gone: killed, OOM, inline */
    CHURN_FOLLOW_REPLACED, /* another run's trace took the file's path */
};

typedef struct churn_follow_end {
    enum churn_follow_how kind;
    uint64_t how, detail; /* CHURN_EXIT_* and the status or signal, for CHURN_FOLLOW_EXIT */
} churn_follow_end;

churn_follow *churn_follow_new(const char *trace);
void churn_follow_free(churn_follow *f);

/* Reads what is new, up to about budget raw bytes of records; returns 1 when it read some. */
int churn_follow_poll(churn_follow *f, size_t budget);

enum churn_follow_state churn_follow_state_of(const churn_follow *f);
const char *churn_follow_why(const churn_follow *f);
/* Valid in CHURN_FOLLOW_ENDED. */
const churn_follow_end *churn_follow_end_of(const churn_follow *f);
/* One line for people: "exit 0", "signal 9 (KILL)", "exec", "detached", "killed or ended
   without an exit libchurn saw (its last checkpoint 0.0 s before the end was noticed)". */
const char *churn_follow_end_text(const churn_follow *f, char *buf, size_t len);

const char *churn_follow_trace(const churn_follow *f);
/* The trace file's device and inode (0 before it was opened). */
void churn_follow_file(const churn_follow *f, uint64_t *dev, uint64_t *ino);
/* The traced executable (the module map's first module), or "" before it is known. */
const char *churn_follow_exe(const churn_follow *f);
/* The analysis as read so far, unfinished (growth sites, totals, live figures, stacks,
   modules); NULL while waiting.  Read it on the follower's thread only. */
churn_analysis *churn_follow_analysis(churn_follow *f);
const churn_trace_info *churn_follow_info(const churn_follow *f);
const churn_warnings *churn_follow_warnings(const churn_follow *f);
/* Bumped whenever records were read: what was computed at the same generation holds. */
uint64_t churn_follow_generation(const churn_follow *f);
/* Times the state started over from a later segment's carry (segments lost unread), and
   the segments lost. */
uint64_t churn_follow_restarts(const churn_follow *f);
uint64_t churn_follow_lost(const churn_follow *f);

/* Ends the symbolizer's prefetching (symbols/symbolize.h): a fork copies only the thread
   that forks, so a program that follows several traces settles every follower's before
   it forks for one (churn_follow_finish_start settles its own). */
void churn_follow_settle(churn_follow *f);

/* Starts fn in a child process, forked from here, on a copy of the state as it is now,
   finished as the end of a trace is (churn_analysis_finish, the fragmentation table); the
   follower reads on meanwhile.  What fn writes to out comes back from
   churn_follow_finish_done.  NULL with err set when nothing was read yet or no child could
   be started. */
typedef void (*churn_follow_fn)(void *ctx, churn_analysis *a, FILE *out);
typedef struct churn_follow_job churn_follow_job;
churn_follow_job *churn_follow_finish_start(churn_follow *f, churn_follow_fn fn, void *ctx,
                                            char *err, size_t errlen);
/* 0 while the child runs (wait: until it is done); then 1 with fn's output in *buf
   (malloc'd, *len bytes), or -1 with err set, and the job is freed. */
int churn_follow_finish_done(churn_follow_job *j, int wait, char **buf, size_t *len, char *err,
                             size_t errlen);
/* Ends the child and frees the job (NULL: nothing). */
void churn_follow_finish_cancel(churn_follow_job *j);

#endif
