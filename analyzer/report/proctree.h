/*
 * A traced process tree: the index the shim writes beside the first trace (NAME.index,
 * shim/record/index.c, docs/format.md) read back as one entry per process image, and the figures
 * that compare the images of a tree (`churn-analyze --tree`, and `churn run`, which names the
 * image that allocated most).
 */
#ifndef CHURN_PROCTREE_H
#define CHURN_PROCTREE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Not analysis.h: cli/churn.c includes this beside the shim's headers, whose types it does
   not mix with the analyzer's. */
struct churn_analysis;

typedef struct churn_proc {
    long pid, ppid;
    int n; /* execs of pid before this image */
    char *trace, *exe, *argv0;
    char *command; /* the start line's argv, or the end line's when the process retitled itself */
    int ended, how, detail; /* the index's end line: CHURN_EXIT_* and status or signal */
} churn_proc;

typedef struct churn_proctree {
    churn_proc *v; /* in the order the images started */
    size_t n;
    size_t repeated; /* start lines naming a trace an earlier one names: not in v */
    struct churn_proc_index *by_image; /* v's images by pid and n */
} churn_proctree;

/* NAME.index for NAME.zst or NAME, or path itself when it ends in ".index"; malloc'd. */
char *churn_proctree_index_of(const char *trace);
/* 0 when path holds at least one image; -1 (nothing to free) otherwise.  An image is listed
   once per trace: a start line naming a trace an earlier line named (by the same path, or
   another path to the same file) is counted in repeated, and its end line is not read. */
int churn_proctree_load(const char *path, churn_proctree *t);
void churn_proctree_free(churn_proctree *t);

churn_proc *churn_proctree_find(const churn_proctree *t, long pid, int n);
/* The last image of pid: the program a script in front of it exec'd, or pid's only one. */
churn_proc *churn_proctree_last(const churn_proctree *t, long pid);

/* How the image ended, from the index: "exit 0", "signal 6 (ABRT)", "exec", "_exit 1", ...;
   "killed" when it has no end line and no exec followed (SIGKILL, which no process sees
   coming, or it still runs). */
const char *churn_proc_end(const churn_proctree *t, const churn_proc *p, char *buf,
                           size_t size);

/* The command line on one line of a table: at most width characters of it, a control
   character as its C escape (a `python3 -c` script's newlines as \n), "..." when cut. */
void churn_proc_command(FILE *out, const char *command, int width);

/* What one image's trace says, for the tree's summary. */
typedef struct churn_proc_figures {
    int analyzed;             /* 0: the trace could not be read; error says why */
    char error[256];
    uint64_t allocs, alloc_bytes, frees, free_bytes;
    int peak_known;           /* the trace has events (CHURN_EVENTS=1) */
    int64_t peak_bytes;
    /* Live at the end of the trace: allocated by the image itself, and carried in by its
       first segment used (a forked child's copies of its parent's objects, or objects of
       segments the ring overwrote) and never freed. */
    uint64_t live_count, live_bytes;
    uint64_t carried_live_count, carried_live_bytes;
    int64_t start_live_bytes;        /* carried in by the first segment used */
    int64_t growth_bytes;            /* live bytes at the end minus at the start */
    size_t epochs;
    int has_rate;                    /* two epochs or more: a fitted rate */
    double growth_per_epoch;         /* live bytes per epoch, least squares (trends.h) */
    int has_duration;
    uint64_t duration_ns;            /* first epoch's start to last epoch's end */
    uint64_t start_ns, end_ns;       /* CLOCK_MONOTONIC, comparable across the tree */
    int has_exit;                    /* the trace's own EXIT record */
    uint64_t exit_how, exit_detail;
} churn_proc_figures;

/* From a finished analysis of the whole trace. */
void churn_proc_figures_of(const struct churn_analysis *a, churn_proc_figures *f);

/* Analyzes trace (no report, no allocator model, no symbols) and fills f; f->analyzed says
   whether it could be read. */
void churn_proc_measure(const char *trace, churn_proc_figures *f);

/* An image with no end line in the index takes how its trace's EXIT record says it ended: a
   process that changed user (nginx's workers run as nobody) cannot reopen the index it
   started in, while its trace was opened before. */
void churn_proc_take_exit(churn_proc *p, const churn_proc_figures *f);
/* The same for every image with no end line and no exec after it, each trace read for it
   (the figures are not kept). */
void churn_proctree_take_exits(churn_proctree *t);

/* The image that allocated the most bytes, or that grew most; -1 when none was analyzed. */
long churn_proctree_most_allocated(const churn_proctree *t, const churn_proc_figures *f);
long churn_proctree_grew_most(const churn_proctree *t, const churn_proc_figures *f);

/* v bytes in binary units, as the reports print them: "512B", "1.5KiB", "8.1MiB". */
const char *churn_proc_bytes(double v, char *buf, size_t len);

/* The combined summary (docs/analyzer.md, "Process trees"): a table of the images with
   their figures and the totals, which image allocated most and which grew most. */
void churn_proctree_text(FILE *out, const char *index, const churn_proctree *t,
                         const churn_proc_figures *f);
/* The same as the JSON "summary" object (no trailing newline). */
void churn_proctree_json(FILE *out, const char *index, const churn_proctree *t,
                         const churn_proc_figures *f);
/* An image's fields for its entry of the JSON "processes" array, before its "report". */
void churn_proctree_json_proc(FILE *out, const churn_proctree *t, const churn_proc *p);

#endif
