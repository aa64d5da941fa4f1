/*
 * The ELF way in: libchurn defines the malloc family, C++ operator new/delete and the page
 * calls, and the dynamic linker sends the program's calls here first; each forwards to the
 * next definition in line (glibc, or a tcmalloc/jemalloc preloaded after libchurn).
 *
 * C++ operators forward to the next operator, not to malloc: with tcmalloc or jemalloc
 * preloaded, operator new never calls malloc.  The guard is set around every forwarded call,
 * so whatever the next allocator calls back into (its own malloc, mmap) is not traced twice;
 * it is a cleanup variable so that a throwing operator new leaves it restored (this file is
 * built with -fexceptions).
 */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"

/* Calls that arrive before start-up, during it, inside libchurn, or after the trace closed. */
static inline __attribute__((always_inline)) int ready_to_trace(void)
{
    if (churn_in_shim)
        return 0;
    int s = atomic_load_explicit(&churn_state, memory_order_relaxed);
    if (CHURN_LIKELY(s == CHURN_ON))
        return !churn_stack_short();
    if (s == CHURN_OFF) {
        churn_ensure_init();
        return atomic_load(&churn_state) == CHURN_ON;
    }
    return 0;
}

static int have_next(void)
{
    if (CHURN_UNLIKELY(!churn_next.free))
        churn_real_resolve();
    return churn_next.free != NULL;
}

/* ---- C ---- */

/* Under CHURN_SAMPLE_BYTES, malloc, calloc, realloc and free first try the fast path: the
   thread's counts are current, the call is not libchurn's own and no sample falls due
   (churn_sample_*_room, shim.h); then the call is made and counted, and that is all.  Every
   other call, a sample's among them, goes the traced way, which counts it.  A failed
   allocation is not counted.  The allocator's call is made under the guard, as the traced
   way's is: another allocator behind libchurn may call back in, and a fork from a signal
   handler that interrupts glibc's call (which may hold glibc's arena lock) must find the
   guard up, so that fork (shim/process/state.c) takes none of glibc's locks.  The guard notes
   its frame, which a jump out of such a handler leaves (guard.c). */
static inline __attribute__((always_inline)) void *malloc_guarded(size_t size)
{
    churn_guard_hold();
    void *p = churn_next.malloc(size);
    churn_guard_let_go();
    return p;
}

static inline __attribute__((always_inline)) void free_guarded(void *p)
{
    churn_guard_hold();
    churn_next.free(p);
    churn_guard_let_go();
}

static inline __attribute__((always_inline)) void *calloc_guarded(size_t n, size_t size)
{
    churn_guard_hold();
    void *p = churn_next.calloc(n, size);
    churn_guard_let_go();
    return p;
}

static inline __attribute__((always_inline)) void *realloc_guarded(void *p, size_t size)
{
    churn_guard_hold();
    void *q = churn_next.realloc(p, size);
    churn_guard_let_go();
    return q;
}

static __attribute__((noinline, cold)) void *malloc_untraced(size_t size)
{
    return have_next() ? churn_next.malloc(size) : churn_bootstrap_alloc(size, 16);
}

/* No malloc throws: the guard needs no cleanup, and the record call lets it go, a tail
   call. */
static __attribute__((noinline)) void *malloc_traced(size_t size)
{
    if (CHURN_UNLIKELY(!ready_to_trace()))
        return malloc_untraced(size);
    churn_guard_hold();
    void *p = churn_next.malloc(size);
    return churn_record_alloc_let_go(p, size, CHURN_ALLOC_MALLOC);
}

CHURN_API void *malloc(size_t size)
{
    if (churn_sample_alloc_room(size)) {
        void *p = malloc_guarded(size);
        if (CHURN_LIKELY(p != NULL))
            churn_sample_alloc_commit(size);
        return p;
    }
    return malloc_traced(size);
}

static __attribute__((noinline, cold)) void free_untraced(void *p)
{
    if (have_next())
        churn_next.free(p);
}

/* The free is recorded before the real free, which runs under the guard too: a fork from a
   signal handler that interrupts it (holding the allocator's lock) must find the guard up
   (state.c, fork). */
static __attribute__((noinline)) void free_traced(void *p)
{
    if (CHURN_UNLIKELY(!ready_to_trace())) {
        free_untraced(p);
        return;
    }
    churn_guard_hold();
    churn_record_free_let_go(p, CHURN_FREE_FREE);
}

CHURN_API void free(void *p)
{
    if (!p || CHURN_UNLIKELY(churn_bootstrap_owns(p)))
        return;
    if (CHURN_LIKELY(churn_sample_free_quick(p))) {
        free_guarded(p);
        return;
    }
    free_traced(p);
}

static __attribute__((noinline, cold)) void *calloc_untraced(size_t n, size_t size,
                                                             size_t total, int overflow)
{
    if (have_next())
        return churn_next.calloc(n, size); /* its errno on overflow (tcmalloc sets none) */
    if (overflow) {
        errno = ENOMEM;
        return NULL;
    }
    return churn_bootstrap_alloc(total, 16);
}

static __attribute__((noinline)) void *calloc_traced(size_t n, size_t size)
{
    size_t total;
    int overflow = __builtin_mul_overflow(n, size, &total);
    if (CHURN_UNLIKELY(!ready_to_trace() || overflow))
        return calloc_untraced(n, size, total, overflow);
    churn_guard_hold();
    void *p = churn_next.calloc(n, size);
    churn_record_alloc(p, total, CHURN_ALLOC_CALLOC);
    churn_guard_let_go();
    return p;
}

CHURN_API void *calloc(size_t n, size_t size)
{
    size_t total;
    if (!__builtin_mul_overflow(n, size, &total) && churn_sample_alloc_room(total)) {
        void *p = calloc_guarded(n, size);
        if (CHURN_LIKELY(p != NULL))
            churn_sample_alloc_commit(total);
        return p;
    }
    return calloc_traced(n, size);
}

/* A bootstrap block cannot be handed to the real realloc: copy it out. */
static void *realloc_bootstrap(void *p, size_t size)
{
    void *q = malloc(size);
    if (q) {
        size_t old = churn_bootstrap_size(p);
        memcpy(q, p, old < size ? old : size);
    }
    return q;
}

static __attribute__((noinline)) void *realloc_traced(void *p, size_t size)
{
    if (!ready_to_trace()) {
        if (have_next())
            return churn_next.realloc(p, size);
        return p ? NULL : churn_bootstrap_alloc(size, 16);
    }
    churn_guard_hold();
    void *q = churn_record_realloc(p, size);
    churn_guard_let_go();
    return q;
}

CHURN_API void *realloc(void *p, size_t size)
{
    if (p && CHURN_UNLIKELY(churn_bootstrap_owns(p)))
        return realloc_bootstrap(p, size);
    /* a sampled block's realloc records its free, and realloc(p, 0) frees p and may
       answer NULL: those are the traced way's */
    if (churn_sample_realloc_room(p, size)) {
        void *q = realloc_guarded(p, size);
        if (CHURN_LIKELY(q != NULL)) /* else p is as it was */
            churn_sample_realloc_commit(p, size);
        return q;
    }
    return realloc_traced(p, size);
}

CHURN_API void *reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, total);
}

/* The next function is picked once the table is resolved: read earlier, as an argument, a
   first call before resolution found it NULL. */
static void *aligned(size_t align, size_t size, int c11)
{
    if (!ready_to_trace()) {
        if (!have_next())
            return churn_bootstrap_alloc(size, align);
        return c11 ? churn_next.aligned_alloc(align, size) : churn_next.memalign(align, size);
    }
    CHURN_GUARD();
    void *p = c11 ? churn_next.aligned_alloc(align, size) : churn_next.memalign(align, size);
    churn_record_alloc(p, size, CHURN_ALLOC_ALIGNED);
    return p;
}

CHURN_API void *memalign(size_t align, size_t size)
{
    return aligned(align, size, 0);
}

CHURN_API void *aligned_alloc(size_t align, size_t size)
{
    return aligned(align, size, 1);
}

CHURN_API int posix_memalign(void **out, size_t align, size_t size)
{
    if (!align || (align & (align - 1)) || align % sizeof(void *))
        return EINVAL;
    if (!ready_to_trace()) {
        if (have_next())
            return churn_next.posix_memalign(out, align, size);
        *out = churn_bootstrap_alloc(size, align);
        return *out ? 0 : ENOMEM;
    }
    CHURN_GUARD();
    int rc = churn_next.posix_memalign(out, align, size);
    if (!rc)
        churn_record_alloc(*out, size, CHURN_ALLOC_ALIGNED);
    return rc;
}

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* valloc and pvalloc go to the next allocator's own, with its rounding and its overflow
   check: rounding pvalloc's size here wrapped near SIZE_MAX, and pvalloc(SIZE_MAX) returned
   a one-page block where glibc says ENOMEM.  pvalloc's block is recorded as whole pages. */
static void *paged(size_t size, int whole_pages)
{
    size_t ps = page_size();
    if (!ready_to_trace()) {
        if (!have_next())
            return churn_bootstrap_alloc(size, ps);
        return whole_pages ? churn_next.pvalloc(size) : churn_next.valloc(size);
    }
    CHURN_GUARD();
    void *p = whole_pages ? churn_next.pvalloc(size) : churn_next.valloc(size);
    size_t rounded = (size + ps - 1) & ~(ps - 1);
    churn_record_alloc(p, whole_pages && rounded >= size ? rounded : size, CHURN_ALLOC_ALIGNED);
    return p;
}

CHURN_API void *valloc(size_t size)
{
    return paged(size, 0);
}

CHURN_API void *pvalloc(size_t size)
{
    return paged(size, 1);
}

CHURN_API size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (churn_bootstrap_owns(p))
        return churn_bootstrap_size(p);
    return have_next() && churn_next.usable_size ? churn_next.usable_size(p) : 0;
}

/* ---- pages ---- */

static void record_map(int kind, void *addr, size_t len, uint64_t a, void *b)
{
    int s = atomic_load_explicit(&churn_state, memory_order_relaxed);
    if (s != CHURN_ON || churn_writer_is_self() || churn_stack_short())
        return;
    if (churn_in_shim) {
        churn_record_map(kind | CHURN_MAP_INTERNAL, addr, len, a, b);
        return;
    }
    CHURN_GUARD();
    churn_record_map(kind, addr, len, a, b);
}

CHURN_API void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (!have_next())
        return MAP_FAILED;
    void *p = churn_next.mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED)
        record_map(CHURN_MAP_MMAP, p, len, (uint64_t)prot | (uint64_t)flags << 8, NULL);
    return p;
}

CHURN_API void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap(addr, len, prot, flags, fd, off);
}

CHURN_API int munmap(void *addr, size_t len)
{
    if (!have_next())
        return -1;
    int rc = churn_next.munmap(addr, len);
    if (!rc)
        record_map(CHURN_MAP_MUNMAP, addr, len, 0, NULL);
    return rc;
}

CHURN_API void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    if (!have_next())
        return MAP_FAILED;
    void *p = churn_next.mremap(old, old_len, new_len, flags, want);
    if (p != MAP_FAILED)
        record_map(CHURN_MAP_MREMAP, old, old_len, new_len, p);
    return p;
}

CHURN_API int madvise(void *addr, size_t len, int advice)
{
    if (!have_next())
        return -1;
    int rc = churn_next.madvise(addr, len, advice);
    if (!rc)
        record_map(CHURN_MAP_MADVISE, addr, len, (uint64_t)advice, NULL);
    return rc;
}

CHURN_API int brk(void *end)
{
    if (!have_next())
        return -1;
    void *before = churn_next.sbrk(0);
    int rc = churn_next.brk(end);
    if (!rc)
        record_map(CHURN_MAP_BRK, end, 0, churn_zigzag((char *)end - (char *)before), NULL);
    return rc;
}

CHURN_API void *sbrk(intptr_t delta)
{
    if (!have_next())
        return (void *)-1;
    void *before = churn_next.sbrk(delta);
    if (before != (void *)-1 && delta)
        record_map(CHURN_MAP_BRK, (char *)before + delta, 0, churn_zigzag(delta), NULL);
    return before;
}

/* ---- leaving without destructors ---- */

CHURN_API void _exit(int status)
{
    churn_finish(CHURN_EXIT_UNDERSCORE, status);
    have_next();
    churn_next.exit_(status);
}

CHURN_API void _Exit(int status)
{
    churn_finish(CHURN_EXIT_UNDERSCORE, status);
    have_next();
    churn_next.Exit(status);
}
