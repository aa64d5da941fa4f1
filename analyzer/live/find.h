/*
 * Where the traces to follow are: the one a running process writes (the file it holds open
 * whose header is a churn trace's), the image after an exec (the tree's index beside the
 * trace, or the file the pid holds now), and what a path names (a trace, a tree's index, a
 * directory of traces).
 */
#ifndef CHURN_LIVE_FIND_H
#define CHURN_LIVE_FIND_H

#include <stddef.h>
#include <stdint.h>

/* The trace pid writes (malloc'd), or NULL with err set: no such process, no trace open,
   not allowed to look.  except (may be NULL): a file to pass over (the trace of the image
   before an exec, which the new image does not hold but the pid's other files may name). */
char *churn_find_pid_trace(long pid, const char *except, char *err, size_t errlen);

/* The trace of the image that pid's exec started after the image whose trace is `trace`,
   from the index beside it; NULL while the index does not list it yet. */
char *churn_find_next_image(const char *trace);

/* The traces a path names, each once: itself (a file), those its index lists (NAME.index),
   every NAME.zst of a directory.  Calls fn for each; returns -1 (errno set) when the path
   cannot be read. */
int churn_find_traces(const char *path, void (*fn)(void *ctx, const char *trace), void *ctx);

#endif
