/*
 * Two runs side by side (--diff OLD NEW): each trace is analyzed on its own, as a report of
 * it would be, and the two are compared by allocating function (matched by name and module;
 * a function without a name by module and offset, which a rebuild moves) and by the parts of
 * RSS growth.  Before and after a fix, the function the fix touched comes first.
 */
#ifndef CHURN_DIFF_H
#define CHURN_DIFF_H

#include <stddef.h>
#include <stdio.h>

#include "analyze/analysis.h"
#include "report/report.h"

/* The parts of RSS that fragment.h divides it into, each fitted per epoch over a run's
   window without its teardown (the epochs after window_last). */
enum churn_diff_part {
    CHURN_PART_RSS,
    CHURN_PART_LIVE,
    CHURN_PART_SLACK,
    CHURN_PART_PINNED,
    CHURN_PART_FREE_RESIDENT,
    CHURN_PART_OUTSIDE,
    CHURN_PART_UNTRACED,
    CHURN_DIFF_PARTS
};

typedef struct churn_diff_parts {
    double per_epoch[CHURN_DIFF_PARTS];
    int known[CHURN_DIFF_PARTS]; /* two epochs at least had a reading of it */
} churn_diff_parts;

/* One function's figures in one run. */
typedef struct churn_diff_figures {
    int present;
    double bytes_per_epoch; /* the growth fit of its live bytes */
    int64_t live_bytes, live_count;
    uint64_t allocs, alloc_bytes;
    enum churn_retention retention;
} churn_diff_figures;

typedef struct churn_diff_row {
    char *function; /* its name, or "module+0xoffset" */
    const char *module;
    churn_diff_figures old, new;
} churn_diff_row;

typedef struct churn_diff {
    const char *old_path, *new_path;
    churn_analysis *old, *new;
    churn_diff_parts old_parts, new_parts;
    churn_diff_row *rows; /* changed first, by the change in growth, then in live bytes */
    size_t n, changed;
} churn_diff;

/* Compares two finished analyses, each with the suppressions applied to it as its report
   would (churn_report_functions' rows); both must outlive d. */
void churn_diff_build(churn_diff *d, const char *old_path, churn_analysis *old,
                      const char *new_path, churn_analysis *new, churn_suppressions *s);
void churn_diff_free(churn_diff *d);

const char *churn_diff_part_name(enum churn_diff_part p);

/* The forms: text (top: changed functions shown, 0 = all), JSON (every function), and a
   self-contained page. */
void churn_diff_text(FILE *out, const churn_diff *d, size_t top);
void churn_diff_json(FILE *out, const churn_diff *d);
void churn_diff_html(FILE *out, const churn_diff *d, size_t top);

#endif
