/*
 * A seccomp filter run on a system call as the kernel runs it (classic BPF over struct
 * seccomp_data, seccomp(2)), and the system calls libchurn makes in a process it traces, each
 * with the arguments that matter to a filter that looks at them.  The shim asks before the
 * program installs a filter (seccomp.c); churn attach before it loads libchurn into a process
 * that has some (cli/attach.c).
 */
#ifndef CHURN_SECCOMP_FILTER_H
#define CHURN_SECCOMP_FILTER_H

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

/* The filter's answer for d (SECCOMP_RET_KILL_PROCESS for a program the kernel would have
   refused: a load out of bounds, an instruction it does not take). */
static inline uint32_t churn_bpf_run(const struct sock_filter *f, unsigned n,
                                     const struct seccomp_data *d)
{
    uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
    for (unsigned pc = 0; pc < n; pc++) {
        const struct sock_filter *i = &f[pc];
        uint32_t src = BPF_SRC(i->code) == BPF_X ? x : i->k;
        switch (BPF_CLASS(i->code)) {
        case BPF_LD:
        case BPF_LDX: {
            uint32_t v;
            if (BPF_MODE(i->code) == BPF_ABS && BPF_SIZE(i->code) == BPF_W &&
                i->k <= sizeof *d - 4 && !(i->k & 3))
                memcpy(&v, (const char *)d + i->k, 4);
            else if (BPF_MODE(i->code) == BPF_IMM)
                v = i->k;
            else if (BPF_MODE(i->code) == BPF_MEM && i->k < BPF_MEMWORDS)
                v = mem[i->k];
            else if (BPF_MODE(i->code) == BPF_LEN)
                v = sizeof *d;
            else
                return SECCOMP_RET_KILL_PROCESS;
            *(BPF_CLASS(i->code) == BPF_LD ? &a : &x) = v;
            break;
        }
        case BPF_ST:
        case BPF_STX:
            if (i->k >= BPF_MEMWORDS)
                return SECCOMP_RET_KILL_PROCESS;
            mem[i->k] = BPF_CLASS(i->code) == BPF_ST ? a : x;
            break;
        case BPF_ALU:
            switch (BPF_OP(i->code)) {
            case BPF_ADD:
                a += src;
                break;
            case BPF_SUB:
                a -= src;
                break;
            case BPF_MUL:
                a *= src;
                break;
            case BPF_DIV:
                if (!src)
                    return 0;
                a /= src;
                break;
            case BPF_MOD:
                if (!src)
                    return 0;
                a %= src;
                break;
            case BPF_AND:
                a &= src;
                break;
            case BPF_OR:
                a |= src;
                break;
            case BPF_XOR:
                a ^= src;
                break;
            case BPF_LSH:
                a = src < 32 ? a << src : 0;
                break;
            case BPF_RSH:
                a = src < 32 ? a >> src : 0;
                break;
            case BPF_NEG:
                a = -a;
                break;
            default:
                return SECCOMP_RET_KILL_PROCESS;
            }
            break;
        case BPF_JMP:
            if (BPF_OP(i->code) == BPF_JA) {
                pc += i->k;
                break;
            }
            int taken = BPF_OP(i->code) == BPF_JEQ    ? a == src
                        : BPF_OP(i->code) == BPF_JGT  ? a > src
                        : BPF_OP(i->code) == BPF_JGE  ? a >= src
                        : BPF_OP(i->code) == BPF_JSET ? (a & src) != 0
                                                      : -1;
            if (taken < 0)
                return SECCOMP_RET_KILL_PROCESS;
            pc += taken ? i->jt : i->jf;
            break;
        case BPF_RET:
            return BPF_RVAL(i->code) == BPF_A ? a : i->k;
        case BPF_MISC:
            if (BPF_MISCOP(i->code) == BPF_TAX)
                x = a;
            else
                a = x;
            break;
        }
    }
    return SECCOMP_RET_KILL_PROCESS; /* ran off its end: the kernel refuses such a filter */
}

/* The system calls libchurn makes once it traces (its writer, its records on the program's
   threads, its flush at the end), with the arguments a filter may tell apart: flags, modes,
   operations, and a descriptor number of its own (fd).  Pointers are 0: a filter cannot read
   through them.  (A container's filter that answers clone3 with ENOSYS, for glibc to fall back
   to clone, stops nothing.) */
#define CHURN_SECCOMP_FD 1000
static const struct {
    int nr;
    const char *name;
    uint64_t args[4];
} churn_seccomp_needs[] = {
    {SYS_futex, "futex", {0, FUTEX_WAIT_PRIVATE}},
    {SYS_futex, "futex", {0, FUTEX_WAKE_PRIVATE}},
    {SYS_futex, "futex", {0, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME}},
    {SYS_sched_yield, "sched_yield", {0}},
    {SYS_gettid, "gettid", {0}},
    {SYS_getpid, "getpid", {0}},
    {SYS_getppid, "getppid", {0}},
    {SYS_clock_gettime, "clock_gettime", {CLOCK_MONOTONIC}},
    {SYS_clock_gettime, "clock_gettime", {CLOCK_PROCESS_CPUTIME_ID}},
    {SYS_openat, "openat", {(uint64_t)AT_FDCWD, 0, O_RDONLY | O_CLOEXEC}},
    {SYS_openat,
     "openat",
     {(uint64_t)AT_FDCWD, 0, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC}},
    {SYS_read, "read", {CHURN_SECCOMP_FD}},
    {SYS_pread64, "pread64", {CHURN_SECCOMP_FD}},
    {SYS_write, "write", {CHURN_SECCOMP_FD}},
    {SYS_write, "write", {2}},
    {SYS_pwrite64, "pwrite64", {CHURN_SECCOMP_FD}},
    {SYS_close, "close", {CHURN_SECCOMP_FD}},
    {SYS_fstat, "fstat", {CHURN_SECCOMP_FD}},
    {SYS_newfstatat, "newfstatat", {(uint64_t)AT_FDCWD}},
    {SYS_fstatfs, "fstatfs", {CHURN_SECCOMP_FD}},
    {SYS_fcntl, "fcntl", {CHURN_SECCOMP_FD, F_DUPFD_CLOEXEC}},
    {SYS_prlimit64, "prlimit64", {0}},
    {SYS_readlink, "readlink", {0}},
    {SYS_mmap, "mmap", {0, 0, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS}},
    {SYS_munmap, "munmap", {0}},
    {SYS_mprotect, "mprotect", {0, 0, PROT_NONE}},
    {SYS_mprotect, "mprotect", {0, 0, PROT_READ}},
    {SYS_mprotect, "mprotect", {0, 0, PROT_READ | PROT_WRITE}},
    {SYS_madvise, "madvise", {0, 0, MADV_DONTNEED}},
    {SYS_mincore, "mincore", {0}},
    {SYS_rt_sigprocmask, "rt_sigprocmask", {0}},
    {SYS_rt_sigpending, "rt_sigpending", {0}},
    {SYS_rt_sigtimedwait, "rt_sigtimedwait", {0}},
    {SYS_rt_sigaction, "rt_sigaction", {0}},
    {SYS_sigaltstack, "sigaltstack", {0}},
    {SYS_tgkill, "tgkill", {0}},
    {SYS_process_vm_readv, "process_vm_readv", {0}},
    {SYS_pipe2, "pipe2", {0}},
    {SYS_exit, "exit", {0}},
    /* a writer started again (a fork child's) */
    {SYS_clone3, "clone3", {0}},
    {SYS_clone, "clone", {0}},
    {SYS_rseq, "rseq", {0}},
    {SYS_set_robust_list, "set_robust_list", {0}},
};

/* NULL when the filter lets through every system call of churn_seccomp_needs (ALLOW or LOG);
   else the name of the first it stops. */
static inline const char *churn_seccomp_stops(const struct sock_filter *f, unsigned n)
{
    for (size_t i = 0; i < sizeof churn_seccomp_needs / sizeof *churn_seccomp_needs; i++) {
        struct seccomp_data d;
        memset(&d, 0, sizeof d);
        d.nr = churn_seccomp_needs[i].nr;
        d.arch = AUDIT_ARCH_X86_64;
        memcpy(d.args, churn_seccomp_needs[i].args, sizeof churn_seccomp_needs[i].args);
        uint32_t ret = churn_bpf_run(f, n, &d), action = ret & SECCOMP_RET_ACTION_FULL;
        if (action != SECCOMP_RET_ALLOW && action != SECCOMP_RET_LOG &&
            !(action == SECCOMP_RET_ERRNO && (ret & SECCOMP_RET_DATA) == ENOSYS &&
              d.nr == SYS_clone3)) /* glibc falls back to clone */
            return churn_seccomp_needs[i].name;
    }
    return NULL;
}

#endif
