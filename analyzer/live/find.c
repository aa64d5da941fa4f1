#include "live/find.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "churn/format.h"
#include "report/proctree.h"

/* The header of an open trace file: its pid, or -1 when the file is not a churn trace. */
static long long trace_pid(const char *path)
{
    int fd = churn_open_regular(path);
    if (fd < 0)
        return -1;
    churn_file_header h;
    ssize_t n = pread(fd, &h, sizeof h, 0);
    close(fd);
    if (n != (ssize_t)sizeof h || h.frame_magic != CHURN_SKIPPABLE_MAGIC ||
        memcmp(h.magic, CHURN_FILE_MAGIC, 8) != 0 || churn_file_header_crc(&h) != h.header_crc)
        return -1;
    return (long long)h.pid;
}

static int same_file(const char *a, const char *b)
{
    struct stat x, y;
    return a && b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}

char *churn_find_pid_trace(long pid, const char *except, char *err, size_t errlen)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s",
                 errno == ENOENT   ? "no such process"
                 : errno == EACCES ? "not allowed to see its open files"
                                   : strerror(errno));
        return NULL;
    }
    /* A trace whose header names pid is the one (its writer's pid is pid in the process's own
       pid namespace: in another one, the only trace it holds is). */
    char *best = NULL;
    int best_named = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char link[PATH_MAX], fdpath[320];
        snprintf(fdpath, sizeof fdpath, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(fdpath, link, sizeof link - 1);
        if (n <= 0 || link[0] != '/')
            continue;
        link[n] = '\0';
        if (except && same_file(link, except))
            continue;
        long long owner = trace_pid(link);
        if (owner < 0)
            continue;
        if (!best || (!best_named && owner == pid)) {
            free(best);
            best = churn_xstrdup(link);
            best_named = owner == pid;
        }
    }
    closedir(d);
    if (!best)
        snprintf(err, errlen,
                 "it holds no churn trace open (run it with churn run, or churn "
                 "attach %ld)",
                 pid);
    return best;
}

char *churn_find_next_image(const char *trace)
{
    char *index = churn_proctree_index_of(trace);
    churn_proctree t;
    int loaded = churn_proctree_load(index, &t) == 0;
    free(index);
    if (!loaded)
        return NULL;
    char *next = NULL;
    for (size_t i = 0; i < t.n && !next; i++) {
        if (!same_file(t.v[i].trace, trace))
            continue;
        const churn_proc *after = churn_proctree_find(&t, t.v[i].pid, t.v[i].n + 1);
        if (after && after->trace)
            next = churn_xstrdup(after->trace);
    }
    churn_proctree_free(&t);
    return next;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

int churn_find_traces(const char *path, void (*fn)(void *ctx, const char *trace), void *ctx)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (!d)
            return -1;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.' || !ends_with(e->d_name, ".zst"))
                continue;
            char *p = churn_xmalloc(strlen(path) + strlen(e->d_name) + 2);
            sprintf(p, "%s/%s", path, e->d_name);
            fn(ctx, p);
            free(p);
        }
        closedir(d);
        return 0;
    }
    if (ends_with(path, ".index")) {
        churn_proctree t;
        if (churn_proctree_load(path, &t) != 0) {
            errno = EINVAL;
            return -1;
        }
        for (size_t i = 0; i < t.n; i++)
            if (t.v[i].trace)
                fn(ctx, t.v[i].trace);
        churn_proctree_free(&t);
        return 0;
    }
    fn(ctx, path);
    return 0;
}
