/*
 * churn attach PID / churn detach PID: libchurn loaded into a running process with ptrace,
 * as a debugger calls a function in its debuggee.  Part of cli/churn.c (included there, as
 * shim/base/options.c is, so the options are checked by the shim's own parser).
 *
 * attach:
 *   1. refuse, in one line, what ptrace or libchurn cannot do: no such process, another
 *      tracer (TracerPid), another user, a stopped process, one that has ended or whose main
 *      thread has, one suspended in vfork or a vfork child on its memory, no glibc libc.so.6
 *      mapped (a static or musl program), a process already traced; a refused PTRACE_SEIZE
 *      is explained by kernel.yama.ptrace_scope;
 *   2. take one thread at a safe point (below) and call, in it, libc's dlopen on a fresh
 *      copy of libchurn.so, the path written below the thread's red zone, the return address
 *      0: the call comes back to the tracer as a SIGSEGV at address 0, which the thread
 *      never sees.  A copy an earlier attach loaded, of this build and not tracing, is used
 *      again instead (shim/process/attach.c resets it), unless it says it cannot be (its last trace
 *      did not finish): then a fresh one;
 *   3. call churn_attach_start(options) the same way: the trace is opened, the writer started
 *      and the malloc family's new entry bytes planned;
 *   4. stop every thread, check that none is inside the bytes to be replaced (resume and try
 *      again if one is), write them with PTRACE_POKEDATA, resume;
 *   5. restore the thread's registers (general, and the whole FPU/vector state) and let go.
 * detach: 4 with the old bytes, then churn_detach() called as in 3.
 *
 * What could deadlock, and why the order is this one.  A thread stopped by ptrace keeps
 * every lock it holds.  dlopen takes the loader's locks and calls malloc (an arena lock),
 * churn_attach_start calls pthread_create (the stack cache lock) and dlsym: so while they run
 * every other thread runs too, and any lock another thread holds is let go in its time.  The
 * thread that makes the calls must itself hold none of them: it is taken at a safe point,
 * running outside libc, the dynamic loader and libchurn's own code (where such locks are
 * held), or blocked in a system call that waits (futex, poll, read, nanosleep...), which is
 * no place where glibc holds the loader's or the allocator's locks.  Threads are stopped only
 * for step 4, and there the tracer writes memory itself: no code of the process runs while
 * they are stopped, so no lock is needed by anyone.
 *
 * A thread blocked in a system call is put back as it was, with the kernel's restart of the
 * call: as after any signal without a handler.  The calls that signal(7) says fail with EINTR
 * after a stop (epoll_wait, sigtimedwait, semop...) fail so here too, as under any debugger.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <inttypes.h>
#include <linux/kcmp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <time.h>

#include "process/seccomp_filter.h"
#include "ways/patch.h"

#define ATTACH_REFUSED 1
#define SAFE_TRIES 3000   /* rounds over the threads for one at a safe point (1 ms apart) */
#define QUIET_TRIES 2000  /* stops of every thread before none is in the bytes to write */
#define MAX_TASKS 4096
#define COPY_PREFIX "libchurn.attach."

static const char *refusing = "attach to"; /* or "detach from" */

static int refuse(pid_t pid, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(pid_t pid, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "churn: cannot %s %d: ", refusing, (int)pid);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return ATTACH_REFUSED;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

/* ---- /proc/PID/maps ---- */

typedef struct map_row {
    uint64_t lo, hi, off;
    int exec;
    char path[PATH_MAX];
} map_row;

typedef struct maps {
    map_row *v;
    size_t n;
} maps;

static int maps_read(pid_t pid, maps *m)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(name, "r");
    if (!f)
        return -1;
    memset(m, 0, sizeof *m);
    size_t cap = 0;
    char line[PATH_MAX + 128];
    while (fgets(line, sizeof line, f)) {
        map_row r;
        char perms[8];
        int at = 0;
        memset(&r, 0, sizeof r);
        if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &r.lo, &r.hi,
                   perms, &r.off, &at) < 4)
            continue;
        r.exec = perms[2] == 'x';
        if (at > 0) {
            snprintf(r.path, sizeof r.path, "%s", line + at);
            r.path[strcspn(r.path, "\n")] = '\0';
        }
        if (m->n == cap) {
            cap = cap ? cap * 2 : 256;
            map_row *v = realloc(m->v, cap * sizeof *v);
            if (!v)
                break;
            m->v = v;
        }
        m->v[m->n++] = r;
    }
    fclose(f);
    return 0;
}

static const char *path_base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int is_libc(const char *path)
{
    const char *b = path_base(path);
    return !strcmp(b, "libc.so.6") || (!strncmp(b, "libc-2.", 7) && strstr(b, ".so"));
}

static int is_loader(const char *path)
{
    return !strncmp(path_base(path), "ld-linux", 8);
}

static int is_copy(const char *path)
{
    return !strncmp(path_base(path), COPY_PREFIX, strlen(COPY_PREFIX));
}

/* Code where a thread may hold the locks dlopen and pthread_create take: libc's, the
   loader's, and libchurn's with the libraries it brings along. */
static int in_locking_code(const maps *m, uint64_t ip)
{
    for (size_t i = 0; i < m->n; i++) {
        const map_row *r = &m->v[i];
        if (!r->exec || ip < r->lo || ip >= r->hi)
            continue;
        const char *b = path_base(r->path);
        return is_libc(r->path) || is_loader(r->path) || is_copy(r->path) ||
               !strncmp(b, "libchurn", 8) || !strncmp(b, "libunwind", 9) ||
               !strncmp(b, "libzstd", 7) || !strncmp(b, "libcapstone", 11) ||
               !strncmp(b, "liblzma", 7);
    }
    return 0;
}

/* ---- ELF: a defined dynamic symbol's value, and the file's first load address ---- */

typedef struct elf_file {
    uint8_t *data;
    size_t size;
} elf_file;

static int elf_open(const char *path, elf_file *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    e->data = NULL;
    if (fd < 0 || fstat(fd, &st) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return -1;
    e->data = p;
    e->size = (size_t)st.st_size;
    const Elf64_Ehdr *h = p;
    if (memcmp(h->e_ident, ELFMAG, SELFMAG) || h->e_ident[EI_CLASS] != ELFCLASS64 ||
        h->e_machine != EM_X86_64 || h->e_shoff + (uint64_t)h->e_shnum * sizeof(Elf64_Shdr) > e->size ||
        h->e_phoff + (uint64_t)h->e_phnum * sizeof(Elf64_Phdr) > e->size) {
        munmap(p, e->size);
        e->data = NULL;
        return -1;
    }
    return 0;
}

static void elf_close(elf_file *e)
{
    if (e->data)
        munmap(e->data, e->size);
}

/* The vaddr of the load segment at file offset 0: a mapping at offset 0 is there. */
static uint64_t elf_first_vaddr(const elf_file *e)
{
    const Elf64_Ehdr *h = (const Elf64_Ehdr *)e->data;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(e->data + h->e_phoff);
    for (unsigned i = 0; i < h->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0)
            return ph[i].p_vaddr;
    return 0;
}

/* The default version's definition where there are several (glibc's dlopen@@GLIBC_2.34). */
static uint64_t elf_symbol(const elf_file *e, const char *name)
{
    const Elf64_Ehdr *h = (const Elf64_Ehdr *)e->data;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(e->data + h->e_shoff);
    const Elf64_Shdr *dynsym = NULL, *versym = NULL;
    for (unsigned i = 0; i < h->e_shnum; i++) {
        if (sh[i].sh_type == SHT_DYNSYM)
            dynsym = &sh[i];
        else if (sh[i].sh_type == SHT_GNU_versym)
            versym = &sh[i];
    }
    if (!dynsym || dynsym->sh_link >= h->e_shnum)
        return 0;
    const Elf64_Shdr *str = &sh[dynsym->sh_link];
    if (dynsym->sh_offset + dynsym->sh_size > e->size || str->sh_offset + str->sh_size > e->size)
        return 0;
    const Elf64_Sym *sym = (const Elf64_Sym *)(e->data + dynsym->sh_offset);
    size_t n = dynsym->sh_size / sizeof *sym;
    const uint16_t *ver = versym && versym->sh_offset + n * 2 <= e->size
                              ? (const uint16_t *)(e->data + versym->sh_offset)
                              : NULL;
    uint64_t found = 0;
    for (size_t i = 0; i < n; i++) {
        if (sym[i].st_shndx == SHN_UNDEF || sym[i].st_name >= str->sh_size ||
            strcmp((const char *)e->data + str->sh_offset + sym[i].st_name, name))
            continue;
        if (!ver || !(ver[i] & 0x8000))
            return sym[i].st_value;
        found = sym[i].st_value;
    }
    return found;
}

/* ---- ptrace ---- */

typedef struct tracee {
    pid_t tid;
    int sig;       /* a signal it stopped with, to hand back when let go */
    struct user_regs_struct regs;
} tracee;

static int wait_stop(pid_t tid, int *status)
{
    for (;;) {
        pid_t got = waitpid(tid, status, __WALL);
        if (got == tid)
            return 0;
        if (got < 0 && errno != EINTR)
            return -1;
    }
}

/* Seized and stopped; 0, or -1 with errno (ESRCH: it ended meanwhile). */
static int stop_thread(tracee *t, pid_t tid)
{
    t->tid = tid;
    t->sig = 0;
    if (ptrace(PTRACE_SEIZE, tid, NULL, NULL))
        return -1;
    if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL))
        return -1;
    int status;
    if (wait_stop(tid, &status) || !WIFSTOPPED(status)) {
        errno = ESRCH;
        return -1;
    }
    if (status >> 16 == 0)
        t->sig = WSTOPSIG(status); /* a signal-delivery stop came first: the signal is owed */
    if (ptrace(PTRACE_GETREGS, tid, NULL, &t->regs)) {
        ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)t->sig);
        return -1;
    }
    return 0;
}

static void let_go(const tracee *t)
{
    ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(long)t->sig);
}

static size_t list_tasks(pid_t pid, pid_t *out, size_t cap)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/%d/task", (int)pid);
    DIR *d = opendir(name);
    size_t n = 0;
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < cap)
        if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
            out[n++] = (pid_t)atoi(de->d_name);
    closedir(d);
    return n;
}

static int peek_bytes(pid_t tid, uint64_t addr, void *out, size_t len)
{
    struct iovec local = {out, len}, remote = {(void *)addr, len};
    if (process_vm_readv(tid, &local, 1, &remote, 1, 0) == (ssize_t)len)
        return 0;
    /* process_vm_readv may be refused where ptrace's own reads are not */
    for (size_t i = 0; i < len; i += sizeof(long)) {
        errno = 0;
        long w = ptrace(PTRACE_PEEKDATA, tid, (void *)(addr + i), NULL);
        if (errno)
            return -1;
        memcpy((char *)out + i, &w, len - i < sizeof w ? len - i : sizeof w);
    }
    return 0;
}

/* Writes through ptrace, which may write code that is not writable. */
static int poke_bytes(pid_t tid, uint64_t addr, const void *in, size_t len)
{
    uint64_t lo = addr & ~(uint64_t)7, hi = (addr + len + 7) & ~(uint64_t)7;
    for (uint64_t a = lo; a < hi; a += 8) {
        errno = 0;
        long w = ptrace(PTRACE_PEEKDATA, tid, (void *)a, NULL);
        if (errno)
            return -1;
        for (unsigned b = 0; b < 8; b++)
            if (a + b >= addr && a + b < addr + len)
                ((uint8_t *)&w)[b] = ((const uint8_t *)in)[a + b - addr];
        if (ptrace(PTRACE_POKEDATA, tid, (void *)a, (void *)w))
            return -1;
    }
    return 0;
}

/* The whole extended state (x87, SSE, AVX...), which the calls made below may change. */
typedef struct fpu_state {
    uint8_t buf[16384];
    struct iovec iov;
} fpu_state;

static int fpu_save(pid_t tid, fpu_state *f)
{
    f->iov.iov_base = f->buf;
    f->iov.iov_len = sizeof f->buf;
    return ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &f->iov) ? -1 : 0;
}

static int fpu_restore(pid_t tid, fpu_state *f)
{
    return ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &f->iov) ? -1 : 0;
}

/* fn(a0, a1) in the stopped thread t, from its saved registers; data (if any) is written
   below the red zone, 16-byte aligned, and a0 == ARG_DATA passes its address.  The return
   address is 0: the thread comes back as a SIGSEGV at 0, taken here and never delivered.
   Signals that arrive meanwhile are delivered (a handler runs on top of the call).  0 with
   *ret, or -1 after a line. */
#define ARG_DATA UINT64_MAX
static int call_in(pid_t pid, tracee *t, uint64_t fn, uint64_t a0, uint64_t a1,
                   const void *data, size_t dlen, uint64_t *ret)
{
    struct user_regs_struct r = t->regs;
    uint64_t sp = (t->regs.rsp - 128 - 256 - dlen) & ~(uint64_t)15;
    struct iovec local = {(void *)data, dlen}, remote = {(void *)sp, dlen};
    if (dlen && process_vm_writev(t->tid, &local, 1, &remote, 1, 0) != (ssize_t)dlen &&
        poke_bytes(t->tid, sp, data, dlen)) {
        fprintf(stderr, "churn: cannot write to the stack of thread %d: %s\n", (int)t->tid,
                strerror(errno));
        return -1;
    }
    uint64_t zero = 0;
    sp -= 8; /* at a function's entry rsp + 8 is 16-byte aligned */
    if (poke_bytes(t->tid, sp, &zero, 8)) {
        fprintf(stderr, "churn: cannot write to the stack of thread %d: %s\n", (int)t->tid,
                strerror(errno));
        return -1;
    }
    r.rsp = sp;
    r.rip = fn;
    r.rdi = a0 == ARG_DATA ? sp + 8 : a0;
    r.rsi = a1;
    r.rax = 0;
    r.orig_rax = (uint64_t)-1; /* no system call to restart in the middle of the call */
    r.eflags &= ~0x400ull;     /* the ABI's clear direction flag */
    if (ptrace(PTRACE_SETREGS, t->tid, NULL, &r)) {
        fprintf(stderr, "churn: cannot set the registers of thread %d: %s\n", (int)t->tid,
                strerror(errno));
        return -1;
    }
    int deliver = 0;
    for (;;) {
        int status;
        if (ptrace(PTRACE_CONT, t->tid, NULL, (void *)(long)deliver) || wait_stop(t->tid, &status)) {
            fprintf(stderr, "churn: lost thread %d of %d during the call: %s\n", (int)t->tid,
                    (int)pid, strerror(errno));
            return -1;
        }
        deliver = 0;
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            fprintf(stderr, "churn: process %d ended during the call (another thread's exit?)\n",
                    (int)pid);
            return -1;
        }
        if (!WIFSTOPPED(status) || status >> 16)
            continue; /* a group stop or an interrupt: go on */
        int sig = WSTOPSIG(status);
        if (sig == SIGSEGV) {
            struct user_regs_struct now;
            siginfo_t si;
            if (!ptrace(PTRACE_GETREGS, t->tid, NULL, &now) &&
                !ptrace(PTRACE_GETSIGINFO, t->tid, NULL, &si) && now.rip == 0 &&
                si.si_addr == NULL) {
                *ret = now.rax;
                return 0;
            }
        }
        deliver = sig;
    }
}

/* Registers as they were; the thread stays stopped. */
static int put_back(tracee *t, fpu_state *f)
{
    int rc = ptrace(PTRACE_SETREGS, t->tid, NULL, &t->regs) ? -1 : 0;
    if (fpu_restore(t->tid, f))
        rc = -1;
    return rc;
}

static int read_string(pid_t tid, uint64_t addr, char *out, size_t cap)
{
    out[0] = '\0';
    if (!addr)
        return -1;
    for (size_t i = 0; i + 1 < cap; i++) {
        if (peek_bytes(tid, addr + i, out + i, 1))
            return -1;
        if (!out[i])
            return 0;
    }
    out[cap - 1] = '\0';
    return 0;
}

/* System calls that wait, not made by glibc with the loader's or the allocator's lock
   held (x86-64 numbers). */
static int waiting_syscall(long nr)
{
    static const long safe[] = {
        0,   /* read */       1,   /* write */     7,   /* poll */      23,  /* select */
        34,  /* pause */      35,  /* nanosleep */ 43,  /* accept */    45,  /* recvfrom */
        47,  /* recvmsg */    61,  /* wait4 */     128, /* rt_sigtimedwait */
        130, /* rt_sigsuspend */ 202, /* futex */  230, /* clock_nanosleep */
        232, /* epoll_wait */ 247, /* waitid */    270, /* pselect6 */  271, /* ppoll */
        281, /* epoll_pwait */ 288, /* accept4 */  441, /* epoll_pwait2 */
    };
    for (size_t i = 0; i < sizeof safe / sizeof *safe; i++)
        if (safe[i] == nr)
            return 1;
    return 0;
}

/* In a system call the stop interrupted: the kernel left it to be restarted (or EINTR). */
static int in_syscall(const struct user_regs_struct *r)
{
    long rax = (long)r->rax;
    return (long)r->orig_rax >= 0 &&
           (rax == -512 || rax == -513 || rax == -514 || rax == -516 || rax == -EINTR);
}

static int safe_point(const maps *m, const struct user_regs_struct *r)
{
    if (in_syscall(r))
        return waiting_syscall((long)r->orig_rax);
    return !in_locking_code(m, r->rip);
}

/* One thread of pid, stopped at a safe point. */
static int take_thread(pid_t pid, const maps *m, tracee *out)
{
    pid_t tids[MAX_TASKS];
    for (int round = 0; round < SAFE_TRIES; round++) {
        size_t n = list_tasks(pid, tids, MAX_TASKS);
        if (!n) {
            fprintf(stderr, "churn: process %d is gone\n", (int)pid);
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            if (stop_thread(out, tids[i])) {
                if (errno == EPERM)
                    return -1;
                continue;
            }
            if (safe_point(m, &out->regs))
                return 0;
            let_go(out);
        }
        sleep_ms(1);
    }
    fprintf(stderr, "churn: no thread of %d was at a safe point (outside libc and the loader, "
                    "or waiting in a system call) in %d tries\n", (int)pid, SAFE_TRIES);
    errno = EAGAIN;
    return -1;
}

/* ---- the library's copy and its symbols in the process ---- */

typedef struct shim_syms {
    uint64_t start, detach, error, sites, nsites, state, trace;
} shim_syms;

static int shim_symbols(const char *lib, shim_syms *s)
{
    elf_file e;
    if (elf_open(lib, &e))
        return -1;
    uint64_t first = elf_first_vaddr(&e);
    s->start = elf_symbol(&e, "churn_attach_start") - first;
    s->detach = elf_symbol(&e, "churn_detach") - first;
    s->error = elf_symbol(&e, "churn_attach_error") - first;
    s->sites = elf_symbol(&e, "churn_attach_sites") - first;
    s->nsites = elf_symbol(&e, "churn_attach_nsites") - first;
    s->state = elf_symbol(&e, "churn_attach_state") - first;
    s->trace = elf_symbol(&e, "churn_attach_trace") - first;
    int ok = s->start + first && s->detach + first && s->error + first && s->sites + first &&
             s->nsites + first && s->state + first && s->trace + first;
    elf_close(&e);
    return ok ? 0 : -1;
}

/* The copy of the library that is attached now: its load address, or 0. */
static uint64_t attached_copy(pid_t pid, const maps *m, const shim_syms *s)
{
    for (size_t i = 0; i < m->n; i++) {
        if (m->v[i].off || !is_copy(m->v[i].path))
            continue;
        int state = 0;
        if (!peek_bytes(pid, m->v[i].lo + s->state, &state, sizeof state) && state == 1)
            return m->v[i].lo;
    }
    return 0;
}

/* A copy of this very library that is loaded and not tracing (detached, or its start failed),
   to be started again instead of loading another: its load address, or 0.  The same build
   is told by the first page of the file (ELF header, program headers and build ID), which is
   mapped unchanged at the copy's base; a copy of another build (an older churn's) has its
   symbols elsewhere and is left alone. */
static uint64_t idle_copy(pid_t pid, const maps *m, const shim_syms *s, const char *lib)
{
    uint8_t want[4096], have[4096];
    int fd = open(lib, O_RDONLY | O_CLOEXEC);
    ssize_t len = fd >= 0 ? read(fd, want, sizeof want) : -1;
    if (fd >= 0)
        close(fd);
    if (len <= 0)
        return 0;
    for (size_t i = 0; i < m->n; i++) {
        int state = 0;
        if (m->v[i].off || !is_copy(m->v[i].path) ||
            m->v[i].hi - m->v[i].lo < (uint64_t)len ||
            peek_bytes(pid, m->v[i].lo, have, (size_t)len) || memcmp(have, want, (size_t)len) ||
            peek_bytes(pid, m->v[i].lo + s->state, &state, sizeof state))
            continue;
        if (state == 2 || state == -1)
            return m->v[i].lo;
    }
    return 0;
}

/* libc's dlopen and dlerror in the process, through the file it mapped (seen through
   /proc/PID/root, the process's own view of the file system). */
static int libc_functions(pid_t pid, const maps *m, uint64_t *dlopen_at, uint64_t *dlerror_at)
{
    for (size_t i = 0; i < m->n; i++) {
        if (m->v[i].off || !is_libc(m->v[i].path) || m->v[i].path[0] != '/')
            continue;
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, m->v[i].path);
        elf_file e;
        if (elf_open(path, &e))
            return -1;
        uint64_t bias = m->v[i].lo - elf_first_vaddr(&e);
        uint64_t o = elf_symbol(&e, "dlopen"), r = elf_symbol(&e, "dlerror");
        elf_close(&e);
        if (!o || !r)
            return -1;
        *dlopen_at = bias + o;
        *dlerror_at = bias + r;
        return 0;
    }
    return -1;
}

/* A copy of lib that this attach alone loads, unlinked once loaded. */
static int copy_library(const char *lib, char *out, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(out, cap, "%s/" COPY_PREFIX "XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int to = mkstemp(out), from = open(lib, O_RDONLY | O_CLOEXEC);
    int rc = to >= 0 && from >= 0 && !fchmod(to, 0644) ? 0 : -1;
    char buf[65536];
    ssize_t n;
    while (!rc && (n = read(from, buf, sizeof buf)) != 0)
        if (n < 0 || write(to, buf, (size_t)n) != n)
            rc = -1;
    if (to >= 0 && close(to))
        rc = -1;
    if (from >= 0)
        close(from);
    if (rc && to >= 0)
        unlink(out);
    return rc;
}

/* ---- checks before ptrace ---- */

static int ptrace_scope(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int v = -1;
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

static int parse_pid(const char *s, pid_t *pid)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v <= 0 || v > 4194304)
        return -1;
    *pid = (pid_t)v;
    return 0;
}

/* The system call a thread is blocked in and its first argument: 0, or -1 when it runs in
   user space or /proc/PID/task/TID/syscall cannot be read. */
static int task_syscall(pid_t pid, pid_t tid, long *nr, uint64_t *arg0)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
    FILE *f = fopen(path, "re");
    int ok = f && fscanf(f, "%ld %" SCNx64, nr, arg0) == 2 && *nr >= 0;
    if (f)
        fclose(f);
    return ok ? 0 : -1;
}

/* Thread tid of pid is suspended in vfork (or a clone or clone3 with CLONE_VFORK, as
   posix_spawn makes): uninterruptible until its child execs or exits, it stops for no tracer
   meanwhile. */
static int in_vfork(pid_t pid, pid_t tid)
{
    long nr;
    uint64_t arg0, flags = 0;
    if (proc_state(tid, NULL) != 'D' || task_syscall(pid, tid, &nr, &arg0))
        return 0;
    if (nr == SYS_vfork)
        return 1;
    if (nr == SYS_clone)
        return (arg0 & CLONE_VFORK) != 0;
    /* clone3's flags are the first field of the struct it points to; unread, the wait is
       taken for what it most likely is */
    struct iovec local = {&flags, sizeof flags}, remote = {(void *)arg0, sizeof flags};
    return nr == SYS_clone3 &&
           (process_vm_readv(pid, &local, 1, &remote, 1, 0) != sizeof flags ||
            (flags & CLONE_VFORK));
}

/* The child a thread suspended in vfork waits for: of the children that thread made, the one
   that shares its memory (kcmp), or its only one where kcmp is not to be had; -1 when it
   cannot be told. */
static long vfork_child(pid_t pid, pid_t tid)
{
    char path[96];
    long child, only = -1, found = -1;
    size_t n = 0;
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)tid);
    FILE *f = fopen(path, "re");
    int kcmp = 1;
    while (f && found < 0 && fscanf(f, "%ld", &child) == 1) {
        n++;
        only = child;
        long same = kcmp ? syscall(SYS_kcmp, (pid_t)child, pid, KCMP_VM, 0, 0) : -1;
        if (same == 0)
            found = child;
        else if (same < 0 && (errno == ENOSYS || errno == EPERM))
            kcmp = 0;
    }
    if (f)
        fclose(f);
    return found >= 0 ? found : !kcmp && n == 1 ? only : -1;
}

static long parent_of(pid_t pid)
{
    char path[64], line[256];
    long ppid = 0;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof line, f) && sscanf(line, "PPid: %ld", &ppid) != 1)
        ;
    if (f)
        fclose(f);
    return ppid;
}

/* What no attach or detach can work on, for its true reason: a process that has ended, one
   whose main thread has (ptrace and /proc reach its memory and its map through the main
   thread), one suspended in vfork (it stops for no tracer until its child execs or exits:
   attach would wait as long), and the child of a vfork that runs on its parent's memory. */
static int check_threads(pid_t pid)
{
    pid_t tids[MAX_TASKS];
    size_t n = list_tasks(pid, tids, MAX_TASKS), others = 0;
    char main_state = proc_state(pid, NULL);
    for (size_t i = 0; i < n; i++) {
        char state = tids[i] == pid ? main_state : proc_state(tids[i], NULL);
        others += tids[i] != pid && state && state != 'Z' && state != 'X';
        if (in_vfork(pid, tids[i])) {
            long child = vfork_child(pid, tids[i]);
            char which[32] = "";
            if (child > 0)
                snprintf(which, sizeof which, " %ld", child);
            return refuse(pid,
                          "it is suspended in vfork until its child%s execs or exits "
                          "(try again then)",
                          which);
        }
    }
    if ((main_state == 'Z' || main_state == 'X') && others)
        return refuse(pid,
                      "its main thread has exited; %zu other thread%s on, and the "
                      "process's memory and its map are reached through the main thread",
                      others, others > 1 ? "s run" : " runs");
    if (main_state == 'Z' || main_state == 'X')
        return refuse(pid, "it has ended (a zombie)");
    long parent = parent_of(pid);
    n = parent > 0 ? list_tasks((pid_t)parent, tids, MAX_TASKS) : 0;
    for (size_t i = 0; i < n; i++)
        if (in_vfork((pid_t)parent, tids[i]) && vfork_child((pid_t)parent, tids[i]) == pid)
            return refuse(pid,
                          "it is a vfork child that has not exec'd: it runs on the memory "
                          "of its parent %ld",
                          parent);
    return 0;
}

/* The process exists and is ours to signal, and is in a state ptrace can work on; then its
   maps can be read. */
static int check_reachable(pid_t pid, maps *m)
{
    if (kill(pid, 0) && errno == EPERM)
        return refuse(pid, "it belongs to another user (ptrace needs the same user, or root)");
    if (kill(pid, 0))
        return refuse(pid, "no such process");
    int rc = check_threads(pid);
    if (rc)
        return rc;
    if (maps_read(pid, m))
        return refuse(pid, "cannot read /proc/%d/maps: %s", (int)pid, strerror(errno));
    return 0;
}

static int check_process(pid_t pid, const maps *m, const char *what)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return refuse(pid, "no such process");
    long tracer = 0, uid = -1;
    char state = 0, name[64] = "?";
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "TracerPid: %ld", &tracer) == 1 || sscanf(line, "Uid: %ld", &uid) == 1)
            continue;
        if (sscanf(line, "State: %c", &state) == 1)
            continue;
        sscanf(line, "Name: %63s", name);
    }
    fclose(f);
    if (uid >= 0 && geteuid() != 0 && (uid_t)uid != geteuid())
        return refuse(pid, "%s belongs to uid %ld and churn runs as uid %d (ptrace needs the "
                           "same user, or root)", name, uid, (int)geteuid());
    if (tracer) {
        char comm[64] = "?";
        snprintf(path, sizeof path, "/proc/%ld/comm", tracer);
        FILE *c = fopen(path, "r");
        if (c) {
            if (fgets(comm, sizeof comm, c))
                comm[strcspn(comm, "\n")] = '\0';
            fclose(c);
        }
        return refuse(pid, "it is traced by process %ld (%s): a process has one tracer at a "
                           "time", tracer, comm);
    }
    if (state == 'T' || state == 't')
        return refuse(pid, "it is stopped (SIGSTOP, or a debugger's stop); continue it first");
    int libc = 0, preloaded = 0;
    for (size_t i = 0; i < m->n; i++) {
        libc |= is_libc(m->v[i].path);
        preloaded |= !strcmp(path_base(m->v[i].path), "libchurn.so");
    }
    if (!libc)
        return refuse(pid, "%s has no glibc libc.so.6 mapped (a static or non-glibc program): "
                           "%s needs glibc's dlopen", name, what);
    if (preloaded)
        return refuse(pid, "%s already runs with libchurn.so preloaded (churn run, "
                           "LD_PRELOAD): it is traced from its start", name);
    return 0;
}

/* Why PTRACE_SEIZE said EPERM. */
static int refuse_ptrace(pid_t pid)
{
    int scope = ptrace_scope();
    if (scope == 1 && geteuid() != 0)
        return refuse(pid, "kernel.yama.ptrace_scope is 1: only a parent may trace its child "
                           "(run churn as root, or set /proc/sys/kernel/yama/ptrace_scope to 0)");
    if (scope == 2)
        return refuse(pid, "kernel.yama.ptrace_scope is 2: only a process with CAP_SYS_PTRACE "
                           "may trace");
    if (scope == 3)
        return refuse(pid, "kernel.yama.ptrace_scope is 3: ptrace is disabled until reboot");
    return refuse(pid, "ptrace is not permitted (no CAP_SYS_PTRACE in this container, a "
                       "seccomp filter, or a set-uid program)");
}

/* libchurn, once loaded, makes system calls the program may not (its dlopen, its writer
   thread, its records), and a seccomp filter that kills on one would kill the program.  So
   each filter of the thread the load runs on (the writer inherits them) is read with ptrace
   and run on those calls (shim/process/seccomp_filter.h): refused when one stops a call, in
   strict mode, and when the filters cannot be read (that needs CAP_SYS_ADMIN). */
static int check_seccomp(pid_t pid, pid_t tid)
{
    char path[64], line[256];
    int mode = 0;
    snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)pid, (int)tid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f) && sscanf(line, "Seccomp: %d", &mode) != 1)
        ;
    if (f)
        fclose(f);
    if (mode == 1)
        return refuse(pid, "it runs in seccomp strict mode: libchurn's first system call "
                           "would kill it");
    for (long i = 0; mode == 2; i++) {
        long n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)i, NULL);
        if (n < 0 && errno == ENOENT)
            break;
        struct sock_filter *prog = n > 0 ? calloc((size_t)n, sizeof *prog) : NULL;
        if (!prog || ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)i, prog) != n) {
            int err = errno;
            free(prog);
            return refuse(pid,
                          "it runs under a seccomp filter churn cannot read (%s; reading "
                          "one needs CAP_SYS_ADMIN), which may kill it on a system call "
                          "libchurn makes",
                          strerror(err));
        }
        const char *stops = churn_seccomp_stops(prog, (unsigned)n);
        free(prog);
        if (stops)
            return refuse(pid, "a seccomp filter in it stops %s, which libchurn needs", stops);
    }
    return 0;
}

/* ---- stopping every thread to write the entries ---- */

typedef struct all_threads {
    tracee v[MAX_TASKS];
    size_t n;
} all_threads;

static void let_all_go(all_threads *a)
{
    for (size_t i = 0; i < a->n; i++)
        let_go(&a->v[i]);
    a->n = 0;
}

static int seized(const all_threads *a, const tracee *keep, pid_t tid)
{
    if (keep && keep->tid == tid)
        return 1;
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].tid == tid)
            return 1;
    return 0;
}

/* Every thread but keep (stopped already) stopped; a thread made meanwhile is found by
   listing again until the list holds no new one (stopped threads make none). */
static int stop_all(pid_t pid, const tracee *keep, all_threads *a)
{
    static pid_t tids[MAX_TASKS];
    a->n = 0;
    for (;;) {
        size_t n = list_tasks(pid, tids, MAX_TASKS), added = 0;
        for (size_t i = 0; i < n; i++) {
            if (seized(a, keep, tids[i]))
                continue;
            if (a->n == MAX_TASKS)
                return -1;
            if (stop_thread(&a->v[a->n], tids[i]) == 0) {
                a->n++;
                added++;
            } else if (errno != ESRCH) {
                return -1;
            }
        }
        if (!added)
            return 0;
    }
}

static int inside(const churn_patch_site *s, size_t n, uint64_t ip)
{
    for (size_t i = 0; i < n; i++)
        if (ip > s[i].addr && ip < s[i].addr + s[i].len)
            return 1;
    return 0;
}

/* With every thread stopped and none inside the bytes concerned, each site's bytes go from
   `from` (checked) to `to`: attach writes now over was, detach was over now. */
static int write_sites(pid_t pid, tracee *keep, churn_patch_site *s, size_t n, int attach)
{
    static all_threads a;
    for (int tries = 0; tries < QUIET_TRIES; tries++) {
        if (stop_all(pid, keep, &a)) {
            fprintf(stderr, "churn: cannot stop the threads of %d: %s\n", (int)pid,
                    strerror(errno));
            let_all_go(&a);
            return -1;
        }
        int busy = inside(s, n, keep->regs.rip);
        for (size_t i = 0; i < a.n && !busy; i++)
            busy = inside(s, n, a.v[i].regs.rip);
        if (busy) {
            let_all_go(&a);
            sleep_ms(1);
            continue;
        }
        int rc = 0;
        size_t done = 0;
        for (; done < n && !rc; done++) {
            uint8_t cur[24];
            const uint8_t *from = attach ? s[done].was : s[done].now;
            const uint8_t *to = attach ? s[done].now : s[done].was;
            if (s[done].len > sizeof cur || peek_bytes(keep->tid, s[done].addr, cur, s[done].len) ||
                memcmp(cur, from, s[done].len)) {
                fprintf(stderr, "churn: the code at %#llx is not what libchurn %s; left alone\n",
                        (unsigned long long)s[done].addr, attach ? "planned from" : "wrote");
                rc = -1;
                break;
            }
            if (poke_bytes(keep->tid, s[done].addr, to, s[done].len)) {
                fprintf(stderr, "churn: cannot write the code at %#llx: %s\n",
                        (unsigned long long)s[done].addr, strerror(errno));
                rc = -1;
                break;
            }
        }
        /* A half-made attach is taken back before anything runs. */
        for (size_t i = 0; rc && attach && i < done; i++)
            poke_bytes(keep->tid, s[i].addr, s[i].was, s[i].len);
        let_all_go(&a);
        return rc;
    }
    fprintf(stderr, "churn: a thread of %d was inside the code to patch each of %d times\n",
            (int)pid, QUIET_TRIES);
    return -1;
}

static int read_sites(pid_t tid, uint64_t base, const shim_syms *sy, churn_patch_site *s,
                      size_t cap, size_t *n)
{
    uint64_t count = 0;
    if (peek_bytes(tid, base + sy->nsites, &count, sizeof count) || count > cap ||
        peek_bytes(tid, base + sy->sites, s, count * sizeof *s))
        return -1;
    *n = (size_t)count;
    return 0;
}

/* ---- the commands ---- */

static volatile sig_atomic_t interrupted;
static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* ^C, kill and a lost terminal wait while the process's registers are not its own. */
static void block_interruptions(int block)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    sigaddset(&s, SIGQUIT);
    sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &s, NULL);
}

static int do_attach(pid_t pid, const char *lib, const char *config)
{
    maps m;
    int rc = check_reachable(pid, &m);
    if (rc)
        return rc;
    rc = check_process(pid, &m, "attach");
    if (rc)
        return rc;
    shim_syms sy;
    uint64_t dlopen_at, dlerror_at;
    if (shim_symbols(lib, &sy))
        return refuse(pid, "%s does not export churn_attach_start (not this churn's libchurn)",
                      lib);
    if (attached_copy(pid, &m, &sy))
        return refuse(pid, "churn is attached to it already (churn detach %d first)", (int)pid);
    if (libc_functions(pid, &m, &dlopen_at, &dlerror_at))
        return refuse(pid, "dlopen is not among the dynamic symbols of its libc.so.6 (glibc "
                           "2.34 or later exports it from libc)");
    /* A copy loaded by an earlier attach is started again: loading one per attach kept every
       detached copy's memory in the process (shim/process/attach.c). */
    uint64_t reused = idle_copy(pid, &m, &sy, lib);
    char copy[PATH_MAX] = "";
    if (!reused && copy_library(lib, copy, sizeof copy))
        return refuse(pid, "cannot copy %s to %s: %s", lib, copy, strerror(errno));

    block_interruptions(1);
    tracee t;
    fpu_state *fpu = calloc(1, sizeof *fpu);
    if (!fpu || take_thread(pid, &m, &t)) {
        int err = errno;
        if (*copy)
            unlink(copy);
        free(fpu);
        block_interruptions(0);
        if (err == EPERM)
            return refuse_ptrace(pid);
        return ATTACH_REFUSED;
    }
    rc = ATTACH_REFUSED;
    uint64_t handle = 0, started = 1, base = reused;
    static churn_patch_site sites[64];
    size_t n = 0;
    if (check_seccomp(pid, t.tid))
        goto out;
    if (fpu_save(t.tid, fpu)) {
        fprintf(stderr, "churn: cannot read the FPU state of thread %d: %s\n", (int)t.tid,
                strerror(errno));
        goto out;
    }
    if (reused) {
        if (call_in(pid, &t, base + sy.start, ARG_DATA, 0, config, strlen(config) + 1, &started))
            goto restore;
        if ((int)started == 0)
            goto write;
        /* Its last trace did not finish: a fresh copy, as if there were none. */
        if ((int)started != CHURN_ATTACH_NOT_REUSABLE)
            goto failed;
        reused = 0;
        if (copy_library(lib, copy, sizeof copy)) {
            fprintf(stderr, "churn: cannot copy %s to %s: %s\n", lib, copy, strerror(errno));
            *copy = '\0';
            goto restore;
        }
    }
    if (call_in(pid, &t, dlopen_at, ARG_DATA, RTLD_NOW | RTLD_LOCAL, copy, strlen(copy) + 1,
                &handle))
        goto restore;
    if (!handle) {
        uint64_t msg = 0;
        char text[512] = "";
        if (!call_in(pid, &t, dlerror_at, 0, 0, NULL, 0, &msg))
            read_string(t.tid, msg, text, sizeof text);
        fprintf(stderr, "churn: dlopen of libchurn in %d failed: %s\n", (int)pid,
                *text ? text : "(no reason given)");
        goto restore;
    }
    /* dlopen's handle is the library's link_map, whose first field is its load bias */
    if (peek_bytes(t.tid, handle, &base, sizeof base)) {
        fprintf(stderr, "churn: cannot read libchurn's link map in %d\n", (int)pid);
        goto restore;
    }
    if (call_in(pid, &t, base + sy.start, ARG_DATA, 0, config, strlen(config) + 1, &started))
        goto restore;
failed:
    if ((int)started != 0) {
        char text[512] = "";
        peek_bytes(t.tid, base + sy.error, text, sizeof text - 1);
        fprintf(stderr, "churn: libchurn could not start in %d: %s\n", (int)pid,
                *text ? text : "(no reason given)");
        goto restore;
    }
write:
    if (read_sites(t.tid, base, &sy, sites, 64, &n) || write_sites(pid, &t, sites, n, 1)) {
        /* the trace is finished at once: nothing was traced */
        uint64_t ignored;
        call_in(pid, &t, base + sy.detach, 0, 0, NULL, 0, &ignored);
        goto restore;
    }
    rc = 0;
restore:
    if (put_back(&t, fpu)) {
        fprintf(stderr, "churn: cannot restore the registers of thread %d: %s\n", (int)t.tid,
                strerror(errno));
        rc = ATTACH_REFUSED;
    }
out:
    let_go(&t);
    if (*copy)
        unlink(copy);
    free(fpu);
    block_interruptions(0);
    if (!rc) {
        char trace[4096] = "";
        peek_bytes(pid, base + sy.trace, trace, sizeof trace - 1);
        fprintf(stderr, "churn: attached to %d (%zu entries patched, %s); tracing into %s\n",
                (int)pid, n,
                reused ? "libchurn loaded by an earlier attach started again"
                       : "libchurn loaded",
                trace);
    }
    return rc;
}

static int do_detach(pid_t pid, const char *lib)
{
    refusing = "detach from";
    maps m;
    int reachable = check_reachable(pid, &m);
    if (reachable)
        return reachable;
    shim_syms sy;
    if (shim_symbols(lib, &sy))
        return refuse(pid, "%s does not export churn_detach (not this churn's libchurn)", lib);
    char path[64], line[256];
    long tracer = 0;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        sscanf(line, "TracerPid: %ld", &tracer);
    if (f)
        fclose(f);
    if (tracer)
        return refuse(pid, "it is traced by process %ld: a process has one tracer at a time",
                      tracer);
    uint64_t base = attached_copy(pid, &m, &sy);
    if (!base) {
        fprintf(stderr, "churn: %d is not attached (no churn attach is in effect)\n", (int)pid);
        return ATTACH_REFUSED;
    }
    block_interruptions(1);
    tracee t;
    fpu_state *fpu = calloc(1, sizeof *fpu);
    if (!fpu || take_thread(pid, &m, &t)) {
        int err = errno;
        block_interruptions(0);
        free(fpu);
        return err == EPERM ? refuse_ptrace(pid) : ATTACH_REFUSED;
    }
    int rc = ATTACH_REFUSED;
    static churn_patch_site sites[64];
    size_t n = 0;
    uint64_t done = 1;
    if (fpu_save(t.tid, fpu)) {
        fprintf(stderr, "churn: cannot read the FPU state of thread %d: %s\n", (int)t.tid,
                strerror(errno));
        goto out;
    }
    if (read_sites(t.tid, base, &sy, sites, 64, &n) || write_sites(pid, &t, sites, n, 0))
        goto restore;
    if (call_in(pid, &t, base + sy.detach, 0, 0, NULL, 0, &done))
        goto restore;
    rc = (int)done == 0 ? 0 : ATTACH_REFUSED;
    if (rc) {
        char text[512] = "";
        peek_bytes(t.tid, base + sy.error, text, sizeof text - 1);
        fprintf(stderr, "churn: libchurn could not finish the trace in %d: %s\n", (int)pid, text);
    }
restore:
    if (put_back(&t, fpu)) {
        fprintf(stderr, "churn: cannot restore the registers of thread %d: %s\n", (int)t.tid,
                strerror(errno));
        rc = ATTACH_REFUSED;
    }
out:
    let_go(&t);
    free(fpu);
    block_interruptions(0);
    if (!rc) {
        char trace[4096] = "";
        peek_bytes(pid, base + sy.trace, trace, sizeof trace - 1);
        fprintf(stderr, "churn: detached from %d; trace in %s\n", (int)pid, trace);
        fprintf(stderr, "churn: analyze it with: ");
        put_shell_word(stderr, self_name);
        fputs(" analyze ", stderr);
        put_shell_word(stderr, trace);
        fputc('\n', stderr);
    }
    return rc;
}

static int attach_library(char *lib, size_t size)
{
    char dir[PATH_MAX];
    if (self_dir(dir, sizeof dir) || find_library(lib, size, dir)) {
        fprintf(stderr, "churn: libchurn.so is neither %s/libchurn.so nor %s/../lib/libchurn.so\n",
                dir, dir);
        return -1;
    }
    return 0;
}

/* churn attach [OPTIONS] PID */
static int attach_command(int argc, char **argv)
{
    static const struct option longopts[] = {
        TRACE_OPTIONS,
        {"for", required_argument, NULL, OPT_FOR},
        {NULL, 0, NULL, 0},
    };
    char config[3 * PATH_MAX] = "";
    size_t len = 0;
    char *out = NULL;
    long seconds = -1;
    int c, index;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+ho:", longopts, &index)) != -1) {
        if (c == 'h') {
            help(stdout);
            return 0;
        }
        if (c == OPT_FOR) {
            char *end;
            seconds = strtol(optarg, &end, 10);
            if (!*optarg || *end || seconds <= 0 || seconds > 31536000)
                return usage_error("attach: bad value for --for: %s (seconds, 1 or more)", optarg);
            continue;
        }
        const char *flag = c == 'o' ? "o" : c == OPT_FLAG ? longopts[index].name : NULL;
        const opt_row *row = flag ? row_of_flag(flag) : NULL;
        if (!row)
            return usage_error("attach: unknown option or missing value: %s", argv[optind - 1]);
        if (apply(row, optarg))
            return usage_error("attach: bad value for %s: %s (%s: %s)", row->flag, optarg,
                               row->name, row->help);
        const char *value = optarg;
        if (c == 'o' && !(value = out = absolute(optarg)))
            return EXIT_SETUP;
        int w = snprintf(config + len, sizeof config - len, "%s=%s\n", row->name, value);
        if (w < 0 || (size_t)w >= sizeof config - len || strchr(value, '\n'))
            return usage_error("attach: option value too long: %s", optarg);
        len += (size_t)w;
    }
    pid_t pid;
    if (optind + 1 != argc || parse_pid(argv[optind], &pid))
        return usage_error("attach: one PID wanted after the options");
    if (!out) {
        char name[64];
        snprintf(name, sizeof name, "churn-%d.zst", (int)pid);
        if (!(out = absolute(name)))
            return EXIT_SETUP;
        int w = snprintf(config + len, sizeof config - len, "CHURN_OUT=%s\n", out);
        if (w < 0 || (size_t)w >= sizeof config - len)
            return usage_error("attach: the trace's path is too long");
    }
    free(out);
    char lib[PATH_MAX];
    if (attach_library(lib, sizeof lib))
        return EXIT_SETUP;
    int rc = do_attach(pid, lib, config);
    if (rc || seconds < 0)
        return rc;
    /* --for: detach after that long, or at once on ^C or kill */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    struct timespec end, now;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += seconds;
    while (!interrupted && kill(pid, 0) == 0) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
            break;
        sleep_ms(50);
    }
    if (kill(pid, 0)) {
        fprintf(stderr, "churn: %d ended while attached; its trace ends with it\n", (int)pid);
        return 0;
    }
    return do_detach(pid, lib);
}

/* churn detach PID */
static int detach_command(int argc, char **argv)
{
    pid_t pid;
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        help(stdout);
        return 0;
    }
    if (argc != 2 || parse_pid(argv[1], &pid))
        return usage_error("detach: one PID wanted");
    char lib[PATH_MAX];
    if (attach_library(lib, sizeof lib))
        return EXIT_SETUP;
    return do_detach(pid, lib);
}
