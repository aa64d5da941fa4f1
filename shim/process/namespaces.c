/*
 * Calls the kernel allows only in a single-threaded process: unshare of a user namespace
 * (or of threads, signal handlers, memory) and setns into a user or mount namespace.  Our
 * writer thread made them fail with EINVAL (`unshare -r` said "unshare failed: Invalid
 * argument").  When one fails so, the writer is stopped and joined, the call made again, and
 * the writer started again; if the program has threads of its own it fails as it would.
 */
#include <errno.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"

/* The joined thread leaves the kernel's thread group a moment after pthread_join returns. */
#define RETRIES 200
#define RETRY_US 50

static int single_threaded_retry(int (*call)(int, int), int a, int b)
{
    if (!churn_writer_pause()) {
        errno = EINVAL;
        return -1;
    }
    int rc = call(a, b);
    for (int i = 0; rc && errno == EINVAL && i < RETRIES; i++) {
        usleep(RETRY_US);
        rc = call(a, b);
    }
    int saved = errno;
    churn_writer_resume();
    errno = saved;
    return rc;
}

static int (*next_unshare(void))(int)
{
    static void *_Atomic next;
    return (int (*)(int))churn_next_of(&next, "unshare");
}

static int unshare_2(int flags, int unused)
{
    (void)unused;
    return next_unshare()(flags);
}

CHURN_API int unshare(int flags)
{
    int rc = next_unshare()(flags);
    if (!rc || errno != EINVAL ||
        !(flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)))
        return rc;
    return single_threaded_retry(unshare_2, flags, 0);
}

static int next_setns(int fd, int nstype)
{
    static void *_Atomic next;
    return ((int (*)(int, int))churn_next_of(&next, "setns"))(fd, nstype);
}

CHURN_API int setns(int fd, int nstype)
{
    int rc = next_setns(fd, nstype);
    /* nstype 0 leaves the kind to the descriptor: it may be a user or mount namespace. */
    if (!rc || errno != EINVAL || (nstype && !(nstype & (CLONE_NEWUSER | CLONE_NEWNS))))
        return rc;
    return single_threaded_retry(next_setns, fd, nstype);
}

/* The pid namespace's id, the inode of /proc/self/ns/pid (the process's own namespace even
   where /proc is the parent namespace's mount); 0 when /proc cannot tell. */
unsigned long churn_pidns_id(void)
{
    struct stat st;
    int saved = errno;
    unsigned long id = stat("/proc/self/ns/pid", &st) ? 0 : (unsigned long)st.st_ino;
    errno = saved;
    return id;
}
