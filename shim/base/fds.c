/*
 * libchurn's own file descriptors (the trace, its index, /proc/self/statm and smaps_rollup,
 * libunwind's memory-probe pipe) kept out of the program's way.  They live near the top of
 * the descriptor range, so the descriptors a program opens, dup2s onto (`exec 3>file` in a
 * shell) or expects after a close-all (a daemon reopening 0..2) are numbered as without us;
 * and the program's close-all loops (close, close_range, closefrom) pass over them, as a
 * descriptor it never opened: close says EBADF.  Without that a daemon closed the trace and
 * the writer's next pwrite went to whatever file took its number.
 *
 * The program can still name one.  Where it asks, none of ours is open: close, dup, dup2, dup3
 * and fcntl on one say EBADF, as for a number nobody opened (bash asks fcntl before `exec
 * 995>file`, and saved and restored ours around it).  A dup2 or dup3 onto one moves ours to
 * another number first: the program gets the number it asked for, libchurn's owner of the
 * descriptor finds the new one at its next use.  A use (churn_fd_use .. churn_fd_done) holds
 * the number against a move, and checks first that it still names our file (its device and
 * inode): one taken over past libc (a raw dup2, or a raw close and a new open) is let go,
 * never read or written, and the owner opens its file again or says what is lost.
 *
 * libunwind keeps the numbers of its pipe itself, where no move can reach them: its read,
 * write, close and pipe2 are pointed at functions here (churn_fd_guard_unwinder), which
 * translate its numbers to the pipe's, and never touch a number that is not the pipe's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/got.h"
#include "shim.h"

#define OWN_MAX 16
#define OWN_ROOM 32              /* numbers kept free for ours under the top of the range */
#define MOVE_WAIT_NS 1000000000u /* a use in progress, given this long to end before a move */

typedef struct own {
    _Atomic int fd;   /* fd + 1; 0: a free slot */
    _Atomic int name; /* the number its owner knows (libunwind's pipe), + 1; else 0 */
    dev_t dev;        /* the file it is open on */
    ino_t ino;
    _Atomic int *where;      /* the owner's copy of the number, moved with it */
    _Atomic uint32_t users;  /* uses in progress */
    _Atomic uint32_t moving; /* a move, or a takeover being let go, is under way */
} own_t;

static own_t own[OWN_MAX];
static __thread int moving_here; /* this thread moves one (a use from its signal handler) */

extern int __close(int fd); /* glibc's close, as a cancellation point, without our check */

static int raw_fcntl(int fd, int cmd, long arg)
{
    return (int)syscall(SYS_fcntl, fd, cmd, arg);
}

static own_t *slot_of(int fd)
{
    for (int i = 0; fd >= 0 && i < OWN_MAX; i++)
        if (atomic_load_explicit(&own[i].fd, memory_order_acquire) == fd + 1)
            return &own[i];
    return NULL;
}

static int same_file(int fd, const own_t *o)
{
    struct stat st;
    return !syscall(SYS_fstat, fd, &st) && st.st_dev == o->dev && st.st_ino == o->ino;
}

/* The slot is free again; its number, the program's now, stays as it is. */
static void let_go(own_t *o)
{
    if (o->where)
        atomic_store(o->where, -1);
    o->where = NULL;
    atomic_store(&o->name, 0);
    atomic_store_explicit(&o->fd, 0, memory_order_release);
}

/* Waits (bounded) for the uses of o in progress to end. */
static void wait_unused(own_t *o)
{
    uint64_t deadline = 0;
    while (atomic_load(&o->users)) {
        uint64_t now = churn_now_ns();
        if (!deadline)
            deadline = now + MOVE_WAIT_NS;
        else if (now > deadline)
            return; /* a use past its check is inside its system call, on our file */
        sched_yield();
    }
}

static int claim(own_t *o)
{
    uint32_t free = 0;
    if (!atomic_compare_exchange_strong(&o->moving, &free, 1))
        return 0;
    moving_here = 1;
    wait_unused(o);
    return 1;
}

static void unclaim(own_t *o)
{
    moving_here = 0;
    atomic_store(&o->moving, 0);
}

/* One of ours by number and by file.  A number of ours now on another file was taken over
   past libc: it is let go. */
static own_t *owned(int fd)
{
    own_t *o = slot_of(fd);
    if (!o || same_file(fd, o))
        return o;
    if (claim(o)) {
        if (atomic_load(&o->fd) == fd + 1 && !same_file(fd, o))
            let_go(o);
        unclaim(o);
    }
    return NULL;
}

/* Below the soft limit (a descriptor must be under it when made) and below 1024, where the
   kernel's descriptor table starts out: a huge limit must not grow every process's table. */
static int high_floor(void)
{
    struct rlimit r;
    rlim_t top = 1024;
    if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < top)
        top = r.rlim_cur;
    return top > 3 + OWN_ROOM ? (int)top - OWN_ROOM : 3;
}

/* fd moved high and listed, its number in *where (or, named, the number its owner keeps
   itself: libunwind's); its new number.  With no free slot it stays unlisted, high.  The
   file is known by the number it was opened at: the program may take the high number over
   the moment it is made, before it is listed (its raw dup2, or a close and a new open), and
   a file read there would be the program's, listed as ours and written to (t_fd_storm.sh). */
static int keep(int fd, _Atomic int *where, int named)
{
    if (fd < 0)
        return fd;
    struct stat st;
    int known = !syscall(SYS_fstat, fd, &st);
    int high = raw_fcntl(fd, F_DUPFD_CLOEXEC, high_floor());
    if (high >= 0) {
        __close(fd);
        fd = high;
    }
    if (where)
        atomic_store(where, fd);
    if (!known)
        return fd;
    for (int i = 0; i < OWN_MAX; i++) {
        own_t *o = &own[i];
        uint32_t free = 0;
        if (atomic_load(&o->fd) || !atomic_compare_exchange_strong(&o->moving, &free, 1))
            continue;
        if (!atomic_load(&o->fd)) {
            o->dev = st.st_dev;
            o->ino = st.st_ino;
            o->where = where;
            atomic_store(&o->name, named ? fd + 1 : 0);
            atomic_store_explicit(&o->fd, fd + 1, memory_order_release);
            atomic_store(&o->moving, 0);
            return fd;
        }
        atomic_store(&o->moving, 0);
    }
    return fd;
}

int churn_fd_keep(_Atomic int *where, int fd)
{
    return keep(fd, where, 0);
}

static own_t *slot_at(_Atomic int *where)
{
    for (int i = 0; where && i < OWN_MAX; i++)
        if (own[i].where == where && atomic_load(&own[i].fd))
            return &own[i];
    return NULL;
}

/* The number of o for one use, held against a move until done(o); -1 when it is gone (then
   no done).  One taken over past libc is let go. */
static int use(own_t *o)
{
    if (moving_here)
        return -1;
    for (;;) {
        while (atomic_load(&o->moving))
            sched_yield();
        atomic_fetch_add(&o->users, 1);
        if (!atomic_load(&o->moving))
            break;
        atomic_fetch_sub(&o->users, 1);
    }
    int fd = atomic_load(&o->fd) - 1;
    if (fd >= 0 && same_file(fd, o))
        return fd;
    atomic_fetch_sub(&o->users, 1);
    if (fd >= 0)
        owned(fd);
    return -1;
}

static void done(own_t *o)
{
    atomic_fetch_sub(&o->users, 1);
}

/* One that found no free slot stays unlisted: used as it is. */
int churn_fd_use(_Atomic int *where)
{
    own_t *o = slot_at(where);
    return o ? use(o) : atomic_load(where);
}

void churn_fd_done(_Atomic int *where)
{
    own_t *o = slot_at(where);
    if (o)
        done(o);
}

/* Waits for a move of o under way to end, then claims it. */
static void claim_wait(own_t *o)
{
    while (!claim(o))
        sched_yield();
}

void churn_fd_drop(_Atomic int *where)
{
    own_t *o = slot_at(where);
    if (!o) {
        int fd = atomic_exchange(where, -1);
        if (fd >= 0)
            __close(fd);
        return;
    }
    claim_wait(o);
    int fd = atomic_load(&o->fd) - 1;
    if (fd >= 0 && same_file(fd, o))
        __close(fd);
    let_go(o);
    unclaim(o);
}

/* The child's only thread is the one that forked: uses and moves of others are gone. */
void churn_fds_after_fork_child(void)
{
    moving_here = 0;
    for (int i = 0; i < OWN_MAX; i++) {
        atomic_store(&own[i].users, 0);
        atomic_store(&own[i].moving, 0);
    }
}

/* Before the program's dup2 or dup3 onto n: ours moves to another number.  1 when it did (the
   program's call must not leave n open on our file if it fails).  A move or a drop of ours
   under way on another thread is waited for: a drop closes n after its check, and would
   close the program's file had its dup2 gone on. */
static int move_away(int n)
{
    own_t *o = owned(n);
    if (!o || moving_here)
        return 0;
    claim_wait(o);
    int moved = 0;
    if (atomic_load(&o->fd) == n + 1 && same_file(n, o)) {
        int to = raw_fcntl(n, F_DUPFD_CLOEXEC, high_floor());
        if (to >= 0) {
            if (o->where)
                atomic_store(o->where, to);
            atomic_store(&o->fd, to + 1);
            moved = 1;
        } else {
            let_go(o); /* no room: ours is lost, the program's call goes on */
        }
    }
    unclaim(o);
    return moved;
}

static int fails_ebadf(void)
{
    errno = EBADF;
    return -1;
}

CHURN_API int close(int fd)
{
    return owned(fd) ? fails_ebadf() : __close(fd);
}

CHURN_API int dup(int fd)
{
    static void *_Atomic next_slot;
    int (*next)(int) = (int (*)(int))churn_next_of(&next_slot, "dup");
    return owned(fd) ? fails_ebadf() : next(fd);
}

/* A dup2 onto a number of ours that then fails leaves it as natively: not open. */
static int after_move(int moved, int n, int rc)
{
    if (moved && rc < 0) {
        int saved = errno;
        __close(n);
        errno = saved;
    }
    return rc;
}

/* The kernel fails a dup2 onto a number another thread's open or F_DUPFD has taken but not
   yet filled with EBUSY.  Among the numbers libchurn moves its own to, that other thread can
   be libchurn's (keep, move_away): a program alone would not have seen it, so the call is
   made again once that moment has passed (fd_storm's dup2s onto 992..999, 1 run in 23). */
static int busy_ours(int rc, int n, int *tries)
{
    if (rc >= 0 || errno != EBUSY || n < high_floor() || ++*tries > 1000)
        return 0;
    sched_yield();
    return 1;
}

CHURN_API int dup2(int fd, int n)
{
    static void *_Atomic next_slot;
    int (*next)(int, int) = (int (*)(int, int))churn_next_of(&next_slot, "dup2");
    if (owned(fd))
        return fails_ebadf();
    int moved = fd != n && move_away(n), rc, tries = 0;
    do
        rc = next(fd, n);
    while (busy_ours(rc, n, &tries));
    return after_move(moved, n, rc);
}

CHURN_API int dup3(int fd, int n, int flags)
{
    static void *_Atomic next_slot;
    int (*next)(int, int, int) = (int (*)(int, int, int))churn_next_of(&next_slot, "dup3");
    if (owned(fd))
        return fails_ebadf();
    int moved = fd != n && move_away(n), rc, tries = 0;
    do
        rc = next(fd, n, flags);
    while (busy_ours(rc, n, &tries));
    return after_move(moved, n, rc);
}

#define FCNTL(name)                                                                            \
    CHURN_API int name(int fd, int cmd, ...)                                                   \
    {                                                                                          \
        static void *_Atomic next_slot;                                                        \
        int (*next)(int, int, ...) = (int (*)(int, int, ...))churn_next_of(&next_slot, #name); \
        va_list ap;                                                                            \
        va_start(ap, cmd);                                                                     \
        void *arg = va_arg(ap, void *);                                                        \
        va_end(ap);                                                                            \
        return owned(fd) ? fails_ebadf() : next(fd, cmd, arg);                                 \
    }
FCNTL(fcntl)
FCNTL(fcntl64)

/* [first, last] without our descriptors: the pieces between them, each closed in one call. */
static int close_pieces(unsigned first, unsigned last, unsigned flags)
{
    while (first <= last) {
        if (owned((int)first)) {
            if (first == last)
                break;
            first++;
            continue;
        }
        unsigned stop = last;
        for (int i = 0; i < OWN_MAX; i++) {
            int v = atomic_load(&own[i].fd);
            if (v && (unsigned)(v - 1) > first && (unsigned)(v - 1) <= stop && owned(v - 1))
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
        int v = atomic_load(&own[i].fd);
        if (v > top)
            top = v;
    }
    for (int fd = low; fd < top; fd++)
        close(fd);
    next(top);
}

/* ---- libunwind's pipe ----

   libunwind's calls of read, write, close and pipe2 come here (churn_fd_guard_unwinder),
   with the numbers it was given: only those of its pipe, ours, reach the kernel, at the
   numbers the pipe has now. */

static own_t *named(int n)
{
    for (int i = 0; n >= 0 && i < OWN_MAX; i++)
        if (atomic_load(&own[i].name) == n + 1 && atomic_load(&own[i].fd))
            return &own[i];
    return NULL;
}

static ssize_t unwinder_read(int n, void *buf, size_t len)
{
    own_t *o = named(n);
    if (!o) /* a file of libunwind's own (the generic library reads ELF files) */
        return read(n, buf, len);
    int fd = use(o);
    if (fd < 0)
        return fails_ebadf();
    ssize_t r = read(fd, buf, len);
    done(o);
    return r;
}

static ssize_t unwinder_write(int n, const void *buf, size_t len)
{
    own_t *o = named(n);
    if (!o)
        return write(n, buf, len);
    int fd = use(o);
    if (fd < 0)
        return fails_ebadf();
    ssize_t r = write(fd, buf, len);
    done(o);
    return r;
}

static int unwinder_close(int n)
{
    own_t *o = named(n);
    if (!o) /* never one of ours: a file libunwind opened itself */
        return __close(n);
    claim_wait(o);
    int fd = atomic_load(&o->fd) - 1;
    if (fd >= 0 && same_file(fd, o))
        __close(fd);
    let_go(o);
    unclaim(o);
    return 0;
}

static int unwinder_pipe2(int fds[2], int flags)
{
    int p[2];
    if (syscall(SYS_pipe2, p, flags))
        return -1;
    for (int i = 0; i < 2; i++)
        fds[i] = keep(p[i], NULL, 1);
    return 0;
}

static void guard_slot(const churn_got_slot *s, void *ctx)
{
    (void)ctx;
    static const struct {
        const char *name;
        void *to;
    } to[] = {{"read", (void *)unwinder_read},
              {"write", (void *)unwinder_write},
              {"close", (void *)unwinder_close},
              {"pipe2", (void *)unwinder_pipe2}};
    for (size_t i = 0; i < sizeof to / sizeof *to; i++)
        if (!strcmp(s->name, to[i].name))
            churn_got_set(s, to[i].to);
}

void churn_fd_guard_unwinder(const void *fn)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (dladdr1(fn, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm && lm->l_name)
        churn_got_each(lm->l_addr, lm->l_name, guard_slot, NULL);
}

/* A process libchurn no longer traces has no use for libunwind's pipe: its numbers go back to
   the program (under a low RLIMIT_NOFILE they are two of few).  libunwind, should it ever
   probe memory again, finds them closed and opens a new pipe. */
void churn_fd_release_captured(void)
{
    for (int i = 0; i < OWN_MAX; i++)
        if (atomic_load(&own[i].name))
            unwinder_close(atomic_load(&own[i].name) - 1);
}
