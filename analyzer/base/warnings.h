/*
 * Warnings about a trace that is usable but not perfect (dropped segments, mismatches).
 * They are kept, not printed, so both reports can show them in their own form; the list is
 * capped so a badly damaged trace cannot grow it without bound.
 */
#ifndef CHURN_WARNINGS_H
#define CHURN_WARNINGS_H

#include <stddef.h>

#define CHURN_WARNINGS_MAX 100

typedef struct churn_warnings {
    char **lines;
    size_t count;
    size_t cap;
    size_t suppressed; /* warnings past CHURN_WARNINGS_MAX, counted only */
} churn_warnings;

void churn_warn(churn_warnings *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void churn_warnings_free(churn_warnings *w);
/* Drops the warnings given after the first `count` (and `suppressed` counted): those of a pass
   whose figures are made again. */
void churn_warnings_truncate(churn_warnings *w, size_t count, size_t suppressed);

#endif
