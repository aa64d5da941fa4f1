/*
 * libchurn's own file descriptors (the trace, /proc/self/statm, libunwind's memory-probe
 * pipe) kept out of the program's way.  They live near the top of the descriptor range, so
 * the descriptors a program opens, dup2s onto (`exec 3>file` in a shell) or expects after a
 * close-all (a daemon reopening 0..2) are numbered as without us; and the program's
 * close-all loops (close, close_range, closefrom) pass over them, as a descriptor it never
 * opened: close says EBADF.  Without that a daemon closed the trace and the writer's next
 * pwrite went to whatever file took its number.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

#define OWN_MAX 8
/* fd + 1 of each descriptor of ours; 0 = free slot. */
static _Atomic int own[OWN_MAX];
/* The thread whose pipe2 calls are libunwind's (churn_fd_capture), or 0. */
static _Atomic pid_t capturing;
/* fd + 1 of each end of the pipe captured so, for churn_fd_release_captured. */
static _Atomic int captured[2];

extern int __close(int fd); /* glibc's close, as a cancellation point, without our check */

static int is_own(int fd)
{
    if (fd < 0)
        return 0;
    for (int i = 0; i < OWN_MAX; i++)
        if (atomic_load_explicit(&own[i], memory_order_relaxed) == fd + 1)
            return 1;
    return 0;
}

/* Below the soft limit (a descriptor must be under it when made) and below 1024, where the
   kernel's descriptor table starts out: a huge limit must not grow every process's table. */
static int high_floor(void)
{
    struct rlimit r;
    rlim_t top = 1024;
    if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < top)
        top = r.rlim_cur;
    return top > 3 + 4 * OWN_MAX ? (int)top - 4 * OWN_MAX : 3;
}

int churn_fd_keep(int fd)
{
    if (fd < 0)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, high_floor());
    if (high >= 0) {
        __close(fd);
        fd = high;
    }
    for (int i = 0; i < OWN_MAX; i++) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&own[i], &expected, fd + 1))
            break;
    }
    return fd;
}

void churn_fd_forget(int fd)
{
    for (int i = 0; fd >= 0 && i < OWN_MAX; i++) {
        int expected = fd + 1;
        if (atomic_compare_exchange_strong(&own[i], &expected, 0))
            break;
    }
}

void churn_fd_drop(int fd)
{
    if (fd < 0)
        return;
    churn_fd_forget(fd);
    __close(fd);
}

void churn_fd_capture(int on)
{
    atomic_store(&capturing, on ? churn_gettid() : 0);
}

/* A process libchurn no longer traces has no use for libunwind's pipe: its numbers go back to
   the program (under a low RLIMIT_NOFILE they are two of few).  libunwind keeps the numbers
   and, should it ever probe memory again, finds them closed and opens a new pipe. */
void churn_fd_release_captured(void)
{
    for (int i = 0; i < 2; i++) {
        int v = atomic_exchange(&captured[i], 0);
        if (v)
            churn_fd_drop(v - 1);
    }
}

CHURN_API int close(int fd)
{
    if (is_own(fd)) {
        errno = EBADF;
        return -1;
    }
    return __close(fd);
}

/* [first, last] without our descriptors: the pieces between them, each closed in one call. */
static int close_pieces(unsigned first, unsigned last, unsigned flags)
{
    while (first <= last) {
        if (is_own((int)first)) {
            if (first == last)
                break;
            first++;
            continue;
        }
        unsigned stop = last;
        for (int i = 0; i < OWN_MAX; i++) {
            int v = atomic_load(&own[i]);
            if (v && (unsigned)(v - 1) > first && (unsigned)(v - 1) <= stop)
                stop = (unsigned)(v - 1) - 1;
        }
        if (syscall(SYS_close_range, first, stop, flags))
            return -1;
        if (stop == last)
            break;
        first = stop + 1;
    }
    return 0;
}

CHURN_API int close_range(unsigned first, unsigned last, int flags)
{
    /* Marking close-on-exec changes nothing of ours: they all have it. */
    if (first > last || (flags & CLOSE_RANGE_CLOEXEC))
        return (int)syscall(SYS_close_range, first, last, flags);
    return close_pieces(first, last, (unsigned)flags);
}

CHURN_API void closefrom(int low)
{
    if (low < 0)
        low = 0;
    if (!close_pieces((unsigned)low, ~0u, 0))
        return;
    /* A kernel without close_range: one by one up to our highest, glibc's own way above it. */
    static void *_Atomic next_slot;
    void (*next)(int) = (void (*)(int))churn_next_of(&next_slot, "closefrom");
    int top = low;
    for (int i = 0; i < OWN_MAX; i++) {
        int v = atomic_load(&own[i]);
        if (v > top)
            top = v;
    }
    for (int fd = low; fd < top; fd++)
        close(fd);
    next(top);
}

/* libunwind opens a pipe to probe memory when it starts (tdep_init_mem_validate); on our
   thread during churn_fd_capture it is kept like our own descriptors. */
CHURN_API int pipe2(int fds[2], int flags)
{
    static void *_Atomic next_slot;
    int (*next)(int *, int) = (int (*)(int *, int))churn_next_of(&next_slot, "pipe2");
    int rc = next(fds, flags);
    pid_t who = atomic_load(&capturing);
    if (!rc && who && who == churn_gettid()) {
        fds[0] = churn_fd_keep(fds[0]);
        fds[1] = churn_fd_keep(fds[1]);
        atomic_store(&captured[0], fds[0] + 1);
        atomic_store(&captured[1], fds[1] + 1);
    }
    return rc;
}
