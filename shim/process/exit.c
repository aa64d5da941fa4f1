/*
 * How the process ends, and the final flush.
 *
 * Every way out through libc ends in glibc's _exit: exit() after its atexit handlers and
 * every destructor (libraries' included, whatever their order against ours), quick_exit()
 * after its at_quick_exit handlers, _exit and _Exit themselves.  glibc calls it internally,
 * past any exported symbol, so its entry is patched (patch.c) and the trace is finished there,
 * after the program's last heap operation.  exit and quick_exit are patched only to say which
 * way the process leaves.  Where a patch cannot be made the exported _exit/_Exit wrappers and
 * libchurn's destructor finish instead.
 *
 * The finish may run on a thread interrupted anywhere: a signal handler that calls _exit,
 * a fatal signal, glibc's abort on a double free, all possibly inside malloc with the arena
 * lock held or inside libchurn with one of its spinlocks held.  So it takes no lock the
 * program can hold (writer.c asks neither the allocator nor the loader on that path) and
 * waits for nothing without a bound.
 *
 * A vfork child shares its parent's memory: it never finishes, or stops, its parent's trace.
 *
 * The writer must never keep a process alive.  glibc counts its threads and the last one to
 * end calls exit(0) (main's pthread_exit, then its other threads returning): the writer takes
 * itself out of that count.  A program whose threads all leave by the raw exit system call
 * (a seccomp-strict program) leaves only the writer behind: the writer notices, finishes the
 * trace and ends the process with the status the kernel would have reported.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ways/patch.h"
#include "shim.h"

/* Which way the process is leaving, set on the way into exit or quick_exit (by the process
   that made the call: a vfork child's call says nothing of its parent). */
static _Atomic int leaving_how;
static _Atomic pid_t leaving_pid;
static _Atomic int leaving_status;
static int hooked; /* _exit's entry is patched: the trace finishes there */

static _Atomic pid_t finisher;   /* the thread running the final flush */
static _Atomic uint32_t finished; /* 1 once it is done */
#define FINISH_WAIT_NS 3000000000u /* a second finisher waits this long for the first */

static void leaving(int how, int status)
{
    /* untraced (a seccomp filter may stop getpid) */
    if (atomic_load(&churn_state) != CHURN_ON)
        return;
    atomic_store(&leaving_status, status);
    atomic_store(&leaving_how, how);
    atomic_store(&leaving_pid, getpid());
}

/* The hooks are called with the function's own arguments in place (patch.h): status is
   its first. */
static void on_exit_entry(long status)
{
    leaving(CHURN_EXIT_NORMAL, (int)status);
}

static void on_quick_exit_entry(long status)
{
    leaving(CHURN_EXIT_QUICK, (int)status);
}

static void on_exit_syscall(long status)
{
    if (atomic_load(&churn_state) != CHURN_ON)
        return;
    int how = atomic_load(&leaving_pid) == getpid() ? atomic_load(&leaving_how)
                                                    : CHURN_EXIT_UNDERSCORE;
    churn_finish(how, (int)status);
}

static int hook(const char *name, void (*fn)(long))
{
    const char *why = NULL;
    void *at = dlsym(RTLD_NEXT, name);
    return at && !churn_patch_entry_hook(at, (void (*)(void))fn, &why) ? 0 : -1;
}

/* exit_group through glibc's syscall() wrapper (from any thread) ends the process as _exit
   does, past every exit function: the trace finishes first.  Every other call goes straight
   on, its arguments and errno untouched.  An exit_group made by a syscall instruction inline
   reaches nothing of libchurn's: the trace then ends at the writer's last flush, which the
   analyzer says (docs/design.md, "How a process ends"). */
typedef long (*syscall_fn)(long, ...);
static void *_Atomic next_syscall;

CHURN_API long syscall(long number, ...)
{
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (number == SYS_exit_group)
        on_exit_syscall(a[0]);
    if (number == SYS_seccomp)
        churn_seccomp_before((unsigned)a[0], (const void *)a[2]);
    syscall_fn next = (syscall_fn)churn_next_of(&next_syscall, "syscall");
    return next(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

typedef void (*exit_fn)(int) __attribute__((noreturn));
static exit_fn next_exit;

void churn_exit_install(void)
{
    /* Looked up now: the loader is no place to go on the way out. */
    next_exit = (exit_fn)dlsym(RTLD_NEXT, "exit");
    churn_next_of(&next_syscall, "syscall");
    /* Without exit's hook every exit would read as _exit: then neither. */
    if (hook("exit", on_exit_entry))
        return;
    hook("quick_exit", on_quick_exit_entry); /* without it, quick_exit reads as _exit */
    hooked = !hook("_exit", on_exit_syscall);
}

/* The program's own calls of exit, for the destructor's status where exit could not be
   hooked (glibc's internal calls pass by: main's return is below). */
CHURN_API void exit(int status)
{
    leaving(CHURN_EXIT_NORMAL, status);
    if (!next_exit)
        next_exit = (exit_fn)dlsym(RTLD_NEXT, "exit");
    next_exit(status);
}

/* main's return value is the status exit() gets (libc calls it internally). */
void churn_exit_main_returned(int status)
{
    leaving(CHURN_EXIT_NORMAL, status);
}

/* The destructor finishes only where _exit could not be hooked. */
void churn_exit_destructor(void)
{
    if (hooked)
        return;
    int mine = atomic_load(&leaving_pid) == getpid();
    churn_finish(CHURN_EXIT_NORMAL, mine ? atomic_load(&leaving_status) : 0);
}

void churn_finish(int how, int detail)
{
    /* Untraced, or finished (a seccomp filter may stop getpid); a vfork child (its pid is not
       the trace's), or no trace open. */
    if (atomic_load(&churn_state) != CHURN_ON || getpid() != churn_outfile_pid())
        return;
    pid_t me = churn_gettid(), first = 0;
    if (!atomic_compare_exchange_strong(&finisher, &first, me)) {
        /* Another thread finishes: this one (a thread that dies of a signal while another
           exits) must not end the process before that is done.  The finisher itself, back
           here from a signal handler, returns at once. */
        uint64_t deadline = churn_now_ns() + FINISH_WAIT_NS;
        while (first != me && !atomic_load(&finished) && churn_now_ns() < deadline)
            churn_futex_wait(&finished, 0, 10000000u);
        return;
    }
    if (atomic_load(&churn_state) == CHURN_ON) {
        int saved = churn_in_shim;
        churn_in_shim = 1;
        churn_writer_finish(how, detail);
        churn_index_end(how, detail);
        atomic_store(&churn_state, CHURN_FINISHED);
        churn_in_shim = saved;
    }
    atomic_store(&finished, 1);
    churn_futex_wake(&finished);
}

/* Nothing of the copy's last trace is finishing: churn_detach returned after its flush. */
void churn_exit_reset(void)
{
    atomic_store(&finisher, 0);
    atomic_store(&finished, 0);
    atomic_store(&leaving_how, 0);
    atomic_store(&leaving_pid, 0);
}

/* ---- the writer and glibc's thread count ---- */

static _Atomic unsigned *nthreads; /* glibc's __nptl_nthreads, or NULL */

void churn_exit_writer_started(void)
{
    static int looked;
    if (!looked) {
        looked = 1;
        nthreads = dlvsym(RTLD_DEFAULT, "__nptl_nthreads", "GLIBC_PRIVATE");
    }
    if (nthreads)
        atomic_fetch_sub(nthreads, 1);
}

/* The writer thread is about to return, and glibc will count it out: it counts itself in
   again, unless the count is 0, which means the program's last thread is in exit(0) and
   the writer's own end would start a second exit.  Returns -1 then. */
int churn_exit_writer_returning(void)
{
    if (!nthreads)
        return 0;
    unsigned n = atomic_load(nthreads);
    while (n)
        if (atomic_compare_exchange_weak(nthreads, &n, n + 1))
            return 0;
    return -1;
}

/* ---- only the writer left ---- */

/* The process's state line (proc(5)): the thread group's leader's state (field 3), the
   number of threads (20) and the leader's exit code as wait reports it (52). */
static int read_stat(char *state, long long *threads, long long *code)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold anything but ends there */
    if (!p || p[1] != ' ')
        return -1;
    p += 2;
    *state = *p;
    for (int field = 3; field < 52; field++) {
        p = strchr(p, ' ');
        if (!p)
            return -1;
        p++;
        long long v = 0;
        for (const char *q = *p == '-' ? p + 1 : p; *q >= '0' && *q <= '9'; q++)
            v = v * 10 + (*q - '0');
        if (field + 1 == 20)
            *threads = v;
        if (field + 1 == 52)
            *code = v;
    }
    return 0;
}

/* 1 when the writer is the process's only live thread: every thread of the program ended
   without exit_group.  Asked with calls that open no descriptor (one would take a number the
   program may be about to open, fd 0 after a daemon's close): /proc/self/task has 2 + the
   number of threads as its link count, the main thread once gone stays listed (a zombie)
   until the whole group is, and a zombie has no working directory.  Only then, with no
   thread of the program left, is the stat line read for *status: what the kernel reports for
   the process, the main thread's exit code. */
int churn_exit_only_writer(int *status)
{
    struct stat st;
    char path[64], link[8];
    if (stat("/proc/self/task", &st) || st.st_nlink != 4)
        return 0;
    snprintf(path, sizeof path, "/proc/self/task/%d/cwd", (int)getpid());
    if (readlink(path, link, sizeof link) >= 0 || errno != ENOENT)
        return 0;
    char state = 0;
    long long threads = 0, code = 0;
    if (read_stat(&state, &threads, &code) || threads != 2 || state != 'Z')
        return 0;
    *status = (int)((code >> 8) & 0xff);
    return 1;
}
