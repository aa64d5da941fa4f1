/*
 * libchurn's own dealings with the kernel.  Raw system calls rather than libc wrappers where
 * the wrapper is one we interpose (mmap, munmap), so our own memory is never recorded, never
 * comes from the traced heap and never re-enters the shim.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

_Atomic uint64_t churn_own_mapped_bytes;

/* ---- /proc/self/maps ----

   Read with a fixed buffer a character at a time, so that no line needs a buffer whatever
   its path's length.  Start-up asks it about a dozen times (the patch engine twice a patch,
   the main thread's stack) while nothing but libchurn runs and changes no mapping it asks
   about: between churn_os_maps_hold and churn_os_maps_release the thread that holds reads it
   once into a table and looks there. */
typedef int (*vma_fn)(const churn_vma *v, void *ctx);

/* fn on each line's mapping in address order until it returns nonzero; -1 when the file
   cannot be opened.  With path, each line's path is there when fn is called (its length in
   *path_len, which may exceed size: then only its start is there, unterminated). */
static int each_vma(vma_fn fn, void *ctx, char *path, size_t size, size_t *path_len)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[4096];
    churn_vma v = {0, 0, 0, 0};
    uintptr_t last_hi = 0;
    /* field: 0, 1 the range's bounds, 2 perms, 3 their end; each space after it begins the
       next: 4 offset, 5 device, 6 inode, 7 the path */
    unsigned field = 0, perm = 0;
    size_t len = 0;
    int done = 0;
    ssize_t n;
    while (!done && (n = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n && !done; i++) {
            char c = buf[i];
            if (c == '\n') {
                v.before = last_hi;
                if (path) {
                    if (len < size)
                        path[len] = '\0';
                    *path_len = len;
                }
                done = fn(&v, ctx);
                last_hi = v.hi;
                v = (churn_vma){0, 0, 0, 0};
                field = perm = 0;
                len = 0;
            } else if (field < 2) {
                int digit = c >= '0' && c <= '9'   ? c - '0'
                            : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                   : -1;
                if (digit >= 0 && field == 0)
                    v.lo = v.lo << 4 | (uintptr_t)digit;
                else if (digit >= 0)
                    v.hi = v.hi << 4 | (uintptr_t)digit;
                else
                    field++;
            } else if (field == 2) {
                if (perm < 3 && c != '-')
                    v.prot |= c == 'r' ? PROT_READ : c == 'w' ? PROT_WRITE : PROT_EXEC;
                if (++perm == 4)
                    field = 3;
            } else if (!path) {
                continue; /* the rest of the line is not asked for */
            } else if (field < 7) {
                field += c == ' ';
            } else if (c != ' ' || len) { /* the path, after the spaces that align it */
                if (len < size)
                    path[len] = c;
                len++;
            }
        }
    }
    close(fd);
    return 0;
}

/* The held table: mapped at the first hold, kept for the next (a fork child's, an attach). */
#define VMA_MAX 16384u
static churn_vma *held_vmas;
static size_t held_count;
static int held_full; /* more mappings than VMA_MAX: lookups past the table read afresh */
static __thread int holding;
static __thread int held_read;

typedef struct {
    uintptr_t addr;
    churn_vma *out;
    int found;
} vma_query;

static int vma_holds(const churn_vma *v, void *ctx)
{
    vma_query *q = ctx;
    if (q->addr >= v->lo && q->addr < v->hi) {
        *q->out = *v;
        q->found = 1;
    }
    return q->found;
}

static int vma_keep(const churn_vma *v, void *ctx)
{
    (void)ctx;
    if (held_count == VMA_MAX) {
        held_full = 1;
        return 1;
    }
    held_vmas[held_count++] = *v;
    return 0;
}

static int read_held(void)
{
    if (!held_vmas) {
        long p = syscall(SYS_mmap, NULL, VMA_MAX * sizeof *held_vmas, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == -1)
            return -1;
        held_vmas = (churn_vma *)p;
    }
    held_count = 0;
    held_full = 0;
    if (each_vma(vma_keep, NULL, NULL, 0, NULL))
        return -1;
    held_read = 1;
    return 0;
}

void churn_os_maps_hold(void)
{
    holding++;
}

void churn_os_maps_release(void)
{
    if (holding && !--holding)
        held_read = 0;
}

int churn_os_vma(uintptr_t addr, churn_vma *out)
{
    if (holding && (held_read || !read_held())) {
        size_t lo = 0, hi = held_count; /* the lines come in address order */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (addr < held_vmas[mid].lo)
                hi = mid;
            else if (addr >= held_vmas[mid].hi)
                lo = mid + 1;
            else {
                *out = held_vmas[mid];
                return 0;
            }
        }
        if (!held_full)
            return -1;
    }
    vma_query q = {addr, out, 0};
    return each_vma(vma_holds, &q, NULL, 0, NULL) || !q.found ? -1 : 0;
}

int churn_os_vma_path(uintptr_t addr, char *path, size_t size)
{
    churn_vma v;
    vma_query q = {addr, &v, 0};
    size_t len = 0;
    if (!size || each_vma(vma_holds, &q, path, size, &len) || !q.found || !len || len >= size)
        return -1;
    return 0;
}

int churn_os_each_vma(int (*fn)(const churn_vma *v, void *ctx), void *ctx)
{
    return each_vma(fn, ctx, NULL, 0, NULL);
}

/* ---- the main thread's stack ---- */

extern void *__libc_stack_end;

/* As pthread_getattr_np reports the main thread's stack: its top the page above
   __libc_stack_end, its size RLIMIT_STACK less what lies above that page, cut at the end of
   the mapping below.  Read without pthread_getattr_np, which reads /proc/self/maps with
   getline: getline takes its buffer from malloc and grows it with glibc's realloc, and a
   program that defines malloc and free but not realloc aborts there. */
int churn_os_main_stack(uintptr_t *lo, uintptr_t *hi)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t end = (uintptr_t)__libc_stack_end;
    churn_vma v;
    struct rlimit r;
    if (churn_os_vma(end, &v) || getrlimit(RLIMIT_STACK, &r))
        return -1;
    uintptr_t top = (end & -page) + page;
    uintptr_t size = ((uintptr_t)r.rlim_cur - (v.hi - top)) & -page;
    if (size > top - v.before)
        size = top - v.before;
    *lo = top - size;
    *hi = top;
    return 0;
}

/* ---- libchurn's own mappings, listed so the writer can count their resident pages ----

   The RSS split shows libchurn's own memory as its own part, not inside the program's
   "outside the heap".  A mapping is listed under a lock taken with a bounded spin only, never
   waited for: one made while the lock is held elsewhere (a signal handler's, a fork child of
   a thread that held it) is counted unlisted, as if all its pages were resident.  The writer
   counts them under its own lock, which fork's prepare handler takes. */
#define OWN_MAX 65536u
#define OWN_SPINS 1000
typedef struct own_map {
    uintptr_t addr;
    size_t len;
} own_map;
static own_map *own;               /* OWN_MAX entries, mapped at the first listing */
static size_t own_count;
static _Atomic uint64_t own_unlisted;
static churn_spinlock own_lock;

static int own_trylock(void)
{
    for (int i = 0; i < OWN_SPINS; i++) {
        uint32_t free = 0;
        if (atomic_compare_exchange_weak(&own_lock.held, &free, 1))
            return 1;
    }
    return 0;
}

static void own_list(uintptr_t addr, size_t len)
{
    if (own_trylock()) {
        if (!own) {
            long p = syscall(SYS_mmap, NULL, OWN_MAX * sizeof *own, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            own = p == -1 ? NULL : (own_map *)p;
        }
        int listed = own && own_count < OWN_MAX;
        if (listed)
            own[own_count++] = (own_map){addr, len};
        churn_spin_unlock(&own_lock);
        if (listed)
            return;
    }
    atomic_fetch_add_explicit(&own_unlisted, len, memory_order_relaxed);
}

/* Waits for the lock: a listed mapping must leave the list (unmapping is the writer's, or
   a thread's ring recycled by it, never a signal handler's). */
static void own_unlist(uintptr_t addr, size_t len)
{
    churn_spin_lock(&own_lock);
    for (size_t i = 0; own && i < own_count; i++)
        if (own[i].addr == addr) {
            own[i] = own[--own_count];
            churn_spin_unlock(&own_lock);
            return;
        }
    churn_spin_unlock(&own_lock);
    atomic_fetch_sub_explicit(&own_unlisted, len, memory_order_relaxed);
}

/* The child's only thread is the one that forked: a holder elsewhere is gone. */
void churn_os_after_fork_child(void)
{
    churn_spin_unlock(&own_lock);
}

/* libchurn.so's own writable segments: its data and .bss (the bootstrap heap, the writer's
   merge cursors, the epoch ticks: megabytes of tables, touched as used). */
static int own_image_segments(struct dl_phdr_info *info, size_t size, void *base)
{
    (void)size;
    if ((void *)info->dlpi_addr != base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;
        uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~(uintptr_t)4095;
        own_list(lo, hi - lo);
    }
    return 1;
}

void churn_os_list_own_image(void)
{
    static int listed; /* a copy attached again lists them once */
    Dl_info self;
    if (!listed++ && dladdr((void *)churn_os_list_own_image, &self) && self.dli_fbase)
        dl_iterate_phdr(own_image_segments, self.dli_fbase);
}

/* The resident pages of a mincore vector (bit 0 of each byte), eight bytes at a time: the
   writer counts every page of its own mappings every OWN_NS (blind.c), and the byte loop was
   a few percent of its instructions on a busy program. */
static size_t resident_in(const unsigned char *vec, size_t n)
{
    size_t pages = 0, k = 0;
    for (; k + 8 <= n; k += 8) {
        uint64_t word;
        memcpy(&word, vec + k, sizeof word);
        /* each byte's bit 0, summed into the top byte by the multiply (at most 8) */
        pages += (size_t)(((word & 0x0101010101010101u) * 0x0101010101010101u) >> 56);
    }
    for (; k < n; k++)
        pages += vec[k] & 1;
    return pages;
}

uint64_t churn_os_own_resident(void)
{
    uint64_t pages = 0, bytes = atomic_load_explicit(&own_unlisted, memory_order_relaxed);
    long page = sysconf(_SC_PAGESIZE);
    unsigned char vec[4096];
    if (!own_trylock())
        return atomic_load(&churn_own_mapped_bytes);
    for (size_t i = 0; own && i < own_count; i++) {
        uintptr_t at = own[i].addr, end = own[i].addr + own[i].len;
        while (at < end) {
            size_t n = (end - at + (size_t)page - 1) / (size_t)page;
            if (n > sizeof vec)
                n = sizeof vec;
            if (syscall(SYS_mincore, at, n * (size_t)page, vec)) {
                pages += n; /* cannot tell: counted resident */
            } else {
                pages += resident_in(vec, n);
            }
            at += n * (size_t)page;
        }
    }
    churn_spin_unlock(&own_lock);
    return bytes + pages * (uint64_t)page;
}

void *churn_os_map(size_t bytes)
{
    long p = syscall(SYS_mmap, NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (p == -1)
        return NULL;
    atomic_fetch_add_explicit(&churn_own_mapped_bytes, bytes, memory_order_relaxed);
    own_list((uintptr_t)p, bytes);
    return (void *)p;
}

void churn_os_unmap(void *p, size_t bytes)
{
    if (p && !syscall(SYS_munmap, p, bytes)) {
        atomic_fetch_sub_explicit(&churn_own_mapped_bytes, bytes, memory_order_relaxed);
        own_unlist((uintptr_t)p, bytes);
    }
}

/* Set at start-up when the process already runs under a seccomp filter (its parent's, or one
   made past libc): libchurn never saw it installed, and process_vm_readv, which few programs
   need, may be what it kills on.  A filter installed later through libc was run on
   process_vm_readv before it was let in (seccomp.c). */
static int filtered_at_start;

void churn_os_note_seccomp(void)
{
    char buf[2048];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = 0;
    const char *mode = strstr(buf, "\nSeccomp:");
    filtered_at_start = mode && atoi(mode + 9) != 0;
}

ssize_t churn_os_read_own(void *buf, const void *addr, size_t len)
{
    if (filtered_at_start)
        return -1;
    struct iovec local = {buf, len}, remote = {(void *)addr, len};
    ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    return n < 0 && errno == EFAULT ? 0 : n;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t churn_now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
uint64_t churn_cpu_ns(void) { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }
uint64_t churn_thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

pid_t churn_gettid(void) { return (pid_t)syscall(SYS_gettid); }

/* /proc/self/statm stays open: one pread per sample, usable from a signal handler, and made
   as a system call of its own: glibc's pread is a cancellation point, and churn_epoch() (an
   epoch's reading) must not be one where the program's call is not.  After a
   fork the descriptor still names the parent's file: the fork handler reopens it.  (Asking
   for the pid at every sample instead was a third system call per epoch, thousands a second
   under workerd; a child made without fork handlers has no writer to report to anyway.) */
static _Atomic int statm_fd = -1;

void churn_rss_reopen(void)
{
    churn_fd_drop(&statm_fd);
    churn_fd_keep(&statm_fd, open("/proc/self/statm", O_RDONLY | O_CLOEXEC));
}

void churn_rss_close(void)
{
    churn_fd_drop(&statm_fd);
}

uint64_t churn_rss_bytes(void)
{
    int fd = churn_fd_use(&statm_fd);
    if (fd < 0) {
        churn_rss_reopen();
        if ((fd = churn_fd_use(&statm_fd)) < 0)
            return 0;
    }
    char buf[128];
    ssize_t n = syscall(SYS_pread64, fd, buf, sizeof buf - 1, 0);
    churn_fd_done(&statm_fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    /* "size resident shared ..." in pages */
    const char *p = buf;
    while (*p && *p != ' ')
        p++;
    uint64_t pages = 0;
    while (*p == ' ')
        p++;
    while (*p >= '0' && *p <= '9')
        pages = pages * 10 + (uint64_t)(*p++ - '0');
    return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

void churn_futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
    struct timespec ts = {(time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u)};
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
}

void churn_futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The program's stderr as it was when libchurn started.  A program may close it, or close 0..2
   and open its own data file as 2: a line written to whatever 2 names then would go into that
   file.  So a message is written only while 2 is still the same file. */
static _Atomic int stderr_known;
static dev_t stderr_dev;
static ino_t stderr_ino;

void churn_log_init(void)
{
    struct stat st;
    int saved = errno;
    if (!atomic_load(&stderr_known) && !fstat(2, &st)) {
        stderr_dev = st.st_dev;
        stderr_ino = st.st_ino;
        atomic_store(&stderr_known, 1);
    }
    errno = saved;
}

static int stderr_is_the_start_one(void)
{
    struct stat st;
    return atomic_load(&stderr_known) && !fstat(2, &st) && st.st_dev == stderr_dev &&
           st.st_ino == stderr_ino;
}

/* A write to a pipe whose reader is gone raises SIGPIPE, by default fatal: the write is made
   with SIGPIPE blocked, and a SIGPIPE it made is taken back before the mask is restored (one
   that was pending already is the program's and stays).  Async-signal-safe. */
static void write_no_sigpipe(const char *buf, size_t len)
{
    sigset_t pipe_only, old, pending;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    int was_pending = !sigpending(&pending) && sigismember(&pending, SIGPIPE);
    ssize_t w = write(2, buf, len);
    if (w < 0 && errno == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_only, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

char *churn_log_capture;
size_t churn_log_capture_size;

void churn_log(const char *fmt, ...)
{
    char line[512];
    if (churn_log_capture) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(churn_log_capture, churn_log_capture_size, fmt, ap);
        va_end(ap);
    }
    if (churn_opt.quiet)
        return;
    int saved = errno;
    if (!stderr_is_the_start_one()) {
        errno = saved;
        return;
    }
    int n = snprintf(line, sizeof line, "libchurn: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n + ((size_t)m < sizeof line - (size_t)n - 1 ? (size_t)m
                                                                       : sizeof line - (size_t)n - 2);
    line[len++] = '\n';
    write_no_sigpipe(line, len);
    errno = saved;
}
