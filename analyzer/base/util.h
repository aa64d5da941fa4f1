/*
 * Allocation helpers for the analyzer: running out of memory is a fatal input-independent
 * condition, so it ends the program with one line instead of being checked at every call.
 */
#ifndef CHURN_ANALYZER_UTIL_H
#define CHURN_ANALYZER_UTIL_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

void *churn_xmalloc(size_t n);
void *churn_xcalloc(size_t count, size_t size);
void *churn_xrealloc(void *p, size_t n);
char *churn_xstrdup(const char *s);

/* Makes room for at least `need` elements of `elem` bytes in *items (capacity *cap), doubling
   so that appends stay amortized O(1). */
void churn_reserve(void *items, size_t *cap, size_t need, size_t elem);

/* A trace can honestly describe more objects than a machine can follow: a 12 KB trace of a
   loop of 10 M allocations holds 10 M live objects, and no rule on a file's size tells it
   from a crafted one.  Before a table takes `bytes` more for `count` items (`what`: "live
   objects"), this ends the analyzer with one line when they do not fit in the physical
   memory or under the process's RLIMIT_AS or RLIMIT_DATA with what it holds already,
   instead of it being killed. */
void churn_need_memory(uint64_t bytes, size_t count, const char *what);

/* Opens path read-only when it is a regular file; else returns -1 with errno set, EINVAL
   when it is not a regular file (a FIFO, device, socket or directory).  The paths come from
   the command line and from traces, so a FIFO or a device must neither block the open
   (O_NONBLOCK, cleared once the file is known to be regular) nor be read. */
int churn_open_regular(const char *path);

/* Signed counters fed by a damaged trace may run past the int64 range; they wrap (as the
   unsigned sums do) instead of being undefined behaviour. */
static inline int64_t churn_wrap_add(int64_t a, uint64_t b)
{
    return (int64_t)((uint64_t)a + b);
}

static inline int64_t churn_wrap_sub(int64_t a, uint64_t b)
{
    return (int64_t)((uint64_t)a - b);
}

/* s with HTML's special characters escaped (&, <, >, "), for text and attribute values of
   the pages the analyzer writes. */
void churn_html_escape(FILE *out, const char *s);

#endif
