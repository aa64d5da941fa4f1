/*
 * seccomp: a filter the program installs may stop system calls libchurn makes while it
 * traces (the writer's writes, its futex waits, reading /proc).  A stopped call fails, and
 * under a filter that kills, kills the program; one that fails leaves a trace that is short
 * without saying so.  So the install is looked at before it happens, through the two ways a
 * program makes it: prctl(PR_SET_SECCOMP) and seccomp(2) through glibc's syscall() (which
 * libseccomp uses; exit.c's wrapper calls here).  The filter is run on each call libchurn
 * makes (seccomp_filter.h); where it stops one, the trace ends before the filter is in
 * place, with an EXIT of kind detach whose detail says seccomp and a line on stderr, and the
 * process goes on untraced, libchurn making no system call of its own from then on.  Strict
 * mode stops nearly every call: the same.  An install that the kernel will refuse (a filter
 * it cannot read, no no_new_privs and no CAP_SYS_ADMIN) changes nothing.  A filter installed
 * by an inline system call, past libc, is not seen.
 */
#include <linux/capability.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "process/seccomp_filter.h"
#include "shim.h"

/* The kernel installs a filter only for a thread with no_new_privs, or with CAP_SYS_ADMIN. */
static int may_install(void)
{
    if (syscall(SYS_prctl, PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1)
        return 1;
    struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct caps[2];
    return !syscall(SYS_capget, &head, caps) &&
           (caps[CAP_SYS_ADMIN / 32].effective >> (CAP_SYS_ADMIN % 32) & 1);
}

/* Why the filter at uprog (the program's struct sock_fprog) ends tracing: the call of
   libchurn's it stops, or why it cannot be told (then it is taken to stop one); NULL when it
   stops none, or the kernel will not take it. */
static const char *filter_stops(const void *uprog, char *why, size_t cap)
{
    struct sock_fprog prog;
    ssize_t got = churn_os_read_own(&prog, uprog, sizeof prog);
    if (got < 0)
        return "libchurn cannot read (a filter already in place forbids how it reads)";
    if (got != sizeof prog || !prog.len || prog.len > BPF_MAXINSNS || !may_install())
        return NULL;
    size_t bytes = prog.len * sizeof *prog.filter;
    struct sock_filter *f = churn_mem_alloc(bytes);
    if (!f)
        return "libchurn cannot read (its memory ran out)";
    const char *stops = churn_os_read_own(f, prog.filter, bytes) == (ssize_t)bytes
                            ? churn_seccomp_stops(f, prog.len)
                            : NULL;
    churn_mem_free(f);
    if (!stops)
        return NULL;
    snprintf(why, cap, "stops %s, which libchurn needs", stops);
    return why;
}

void churn_seccomp_before(unsigned op, const void *uprog)
{
    if (atomic_load(&churn_state) != CHURN_ON || getpid() != churn_outfile_pid())
        return;
    char buf[128];
    const char *why = op == SECCOMP_SET_MODE_STRICT ? "is strict mode: it stops every call but "
                                                      "read and write"
                      : op == SECCOMP_SET_MODE_FILTER ? filter_stops(uprog, buf, sizeof buf)
                                                      : NULL;
    if (!why)
        return;
    int saved = churn_in_shim;
    churn_in_shim = 1;
    churn_log("the program installs a seccomp filter that %s: the trace ends here (its exit "
              "record says seccomp) and the process goes on untraced",
              why);
    churn_fatal_uninstall();
    churn_finish(CHURN_EXIT_DETACH, CHURN_DETACH_SECCOMP);
    churn_writer_join();
    churn_rss_close();
    churn_blind_reset();
    churn_fd_release_captured();
    churn_in_shim = saved;
}

CHURN_API int prctl(int option, ...)
{
    va_list ap;
    va_start(ap, option);
    unsigned long a[4];
    for (int i = 0; i < 4; i++)
        a[i] = va_arg(ap, unsigned long);
    va_end(ap);
    if (option == PR_SET_SECCOMP)
        churn_seccomp_before(a[0] == SECCOMP_MODE_STRICT   ? SECCOMP_SET_MODE_STRICT
                             : a[0] == SECCOMP_MODE_FILTER ? SECCOMP_SET_MODE_FILTER
                                                           : ~0u,
                             (const void *)a[1]);
    static void *_Atomic next_slot;
    int (*next)(int, ...) = (int (*)(int, ...))churn_next_of(&next_slot, "prctl");
    return next(option, a[0], a[1], a[2], a[3]);
}
