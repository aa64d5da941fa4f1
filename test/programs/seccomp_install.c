/*
 * A program that installs a seccomp filter.  Usage: seccomp_install MODE, MODE one of
 *   kill-first   first thing in main, for every thread (TSYNC, through syscall(SYS_seccomp)),
 *                a filter that lets through only what this program needs and kills the
 *                process on anything else;
 *   errno-late   after BEFORE allocations, the same filter for every thread, failing anything
 *                else with EPERM;
 *   errno-main   after BEFORE allocations, that EPERM filter on the main thread only
 *                (prctl(PR_SET_SECCOMP));
 *   blacklist    after BEFORE allocations, for every thread, a filter that kills the process
 *                on a few calls nobody here makes (ptrace, personality, kexec_load) and lets
 *                everything else through;
 *   strict       after BEFORE allocations, strict mode (prctl): then only read, write and
 *                exit, which ends the program (its last thread);
 *   exec-filtered  for every thread, a filter that kills the process on process_vm_readv,
 *                then exec of itself in mode exec-child, with LD_PRELOAD set to
 *                $CHURN_TEST_PRELOAD if that is set: the new image starts under a filter it
 *                never saw installed;
 *   exec-child   BEFORE allocations, then exec of /bin/true (it prints nothing more).
 * Then (but strict) AFTER more allocations.  Prints `before N` once the filter is in place
 * (N: allocations made before it) and `after M` at the end, with write(2).  With a second
 * argument `wait`, it reads a byte from stdin after `before` (for churn attach to find it
 * under its filter), then goes on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BEFORE 100000
#define AFTER 100000

#define ALLOW(nr)                                                                              \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                                           \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define STOP(nr)                                                                               \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                                           \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))

/* The filters: what the program needs and nothing else (the rest killed or failed with
   EPERM, as otherwise says), or everything but a few calls (black), or everything but
   process_vm_readv (no_vm_read); for every thread or the calling one. */
enum { OWN_NEEDS, BLACKLIST, NO_VM_READ };

static int install_filter(int which, unsigned otherwise, int every_thread)
{
    struct sock_filter allow_only[] = {
        LOAD_NR,
        ALLOW(SYS_read),
        ALLOW(SYS_write),
        ALLOW(SYS_exit),
        ALLOW(SYS_exit_group),
        ALLOW(SYS_brk),
        ALLOW(SYS_mmap),
        ALLOW(SYS_munmap),
        ALLOW(SYS_mremap),
        ALLOW(SYS_madvise),
        ALLOW(SYS_futex),
        ALLOW(SYS_getrandom),
        ALLOW(SYS_rt_sigprocmask),
        ALLOW(SYS_rt_sigreturn),
        BPF_STMT(BPF_RET | BPF_K, otherwise),
    };
    struct sock_filter blacklist[] = {
        LOAD_NR,
        STOP(SYS_ptrace),
        STOP(SYS_personality),
        STOP(SYS_kexec_load),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_filter no_vm_read[] = {
        LOAD_NR,
        STOP(SYS_process_vm_readv),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof allow_only / sizeof *allow_only, allow_only};
    if (which == BLACKLIST)
        prog = (struct sock_fprog){sizeof blacklist / sizeof *blacklist, blacklist};
    else if (which == NO_VM_READ)
        prog = (struct sock_fprog){sizeof no_vm_read / sizeof *no_vm_read, no_vm_read};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
        return -1;
    if (every_thread)
        return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC,
                            &prog);
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

static long allocate(long n)
{
    for (long i = 0; i < n; i++) {
        char *volatile p = malloc(64 + (size_t)(i % 200)); /* volatile: the pair stays */
        free(p);
    }
    return n;
}

static void say(const char *what, long n)
{
    char line[64];
    int len = snprintf(line, sizeof line, "%s %ld\n", what, n);
    if (write(1, line, (size_t)len) != len)
        _exit(3);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    long before = 0;
    int rc;
    if (!strcmp(mode, "kill-first")) {
        rc = install_filter(OWN_NEEDS, SECCOMP_RET_KILL_PROCESS, 1);
    } else if (!strcmp(mode, "exec-filtered")) {
        if (install_filter(NO_VM_READ, 0, 1))
            return 2;
        static char preload[4200];
        const char *shim = getenv("CHURN_TEST_PRELOAD");
        snprintf(preload, sizeof preload, "LD_PRELOAD=%s", shim ? shim : "");
        if (shim)
            putenv(preload);
        char *args[] = {argv[0], "exec-child", NULL};
        execv(argv[0], args);
        return 5;
    } else if (!strcmp(mode, "exec-child")) {
        say("before", allocate(BEFORE));
        char *args[] = {"true", NULL};
        execv("/bin/true", args);
        return 5;
    } else {
        before = allocate(BEFORE);
        if (!strcmp(mode, "errno-late"))
            rc = install_filter(OWN_NEEDS, SECCOMP_RET_ERRNO | EPERM, 1);
        else if (!strcmp(mode, "errno-main"))
            rc = install_filter(OWN_NEEDS, SECCOMP_RET_ERRNO | EPERM, 0);
        else if (!strcmp(mode, "blacklist"))
            rc = install_filter(BLACKLIST, 0, 1);
        else if (!strcmp(mode, "strict"))
            rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0);
        else
            return 2;
    }
    if (rc) {
        perror("installing the filter");
        return 2;
    }
    say("before", before);
    char byte;
    if (argc > 2 && !strcmp(argv[2], "wait") && read(0, &byte, 1) != 1)
        return 4;
    if (!strcmp(mode, "strict"))
        syscall(SYS_exit, 0); /* exit_group is not allowed */
    say("after", allocate(AFTER));
    return 0;
}
