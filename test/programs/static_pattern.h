/*
 * The allocation pattern of the statically linked allocator tests (test/t_static_alloc.sh):
 * the C malloc family, one epoch per function, each with a known count and byte total,
 * contents checked.  The program that includes it links its own allocator (jemalloc's static
 * library, or own_malloc.c), so every call here reaches libchurn only through the patch way.
 * Prints `expect NAME ALLOCS FREES ALLOC_BYTES FREE_BYTES LIVE_COUNT LIVE_BYTES` per phase
 * after measuring.
 */
#ifndef STATIC_PATTERN_H
#define STATIC_PATTERN_H

#include <malloc.h>

#include "probe.h"

struct expectation {
    const char *name;
    long allocs, frees, alloc_bytes, free_bytes, live_count, live_bytes;
};

static struct expectation expectations[16];
static int nexpect;

static inline void expect_phase(const char *name, long allocs, long frees, long alloc_bytes,
                         long free_bytes, long live_count, long live_bytes)
{
    struct expectation e = {name, allocs, frees, alloc_bytes, free_bytes, live_count, live_bytes};
    expectations[nexpect++] = e;
}

static inline void *checked(const char *fn, void *p, size_t align, size_t size, unsigned tag)
{
    if (!p)
        die("%s(%zu) failed", fn, size);
    if ((uintptr_t)p % align)
        die("%s(%zu): %p not aligned to %zu", fn, size, p, align);
    if (malloc_usable_size(p) < size)
        die("%s(%zu): usable size %zu", fn, size, malloc_usable_size(p));
    fill(p, size, tag);
    return p;
}

static inline void release(const char *fn, void *p, size_t size, unsigned tag)
{
    if (!filled(p, size, tag))
        die("%s: block overwritten", fn);
    free(p);
}

/* with_reallocarray: the program's allocator defines reallocarray (jemalloc's does not, and
   glibc's would be handed a foreign block). */
static inline void run_pattern(int with_reallocarray)
{
    void *b[16];

    phase("malloc");
    for (unsigned i = 0; i < 10; i++)
        b[i] = checked("malloc", malloc(100), 8, 100, i);
    for (unsigned i = 0; i < 10; i++)
        release("malloc", b[i], 100, i);
    expect_phase("malloc", 10, 10, 1000, 1000, 0, 0);

    phase("calloc");
    for (unsigned i = 0; i < 7; i++) {
        unsigned char *p = calloc(3, 40);
        for (size_t k = 0; p && k < 120; k++)
            if (p[k])
                die("calloc: byte %zu not zero", k);
        b[i] = checked("calloc", p, 8, 120, i);
    }
    for (unsigned i = 0; i < 7; i++)
        release("calloc", b[i], 120, i);
    expect_phase("calloc", 7, 7, 840, 840, 0, 0);

    phase("realloc");
    for (unsigned i = 0; i < 5; i++) {
        void *p = checked("malloc", malloc(50), 8, 50, i);
        p = realloc(p, 5000);
        if (!p || !filled(p, 50, i))
            die("realloc lost the contents");
        b[i] = checked("realloc", p, 8, 5000, i);
    }
    for (unsigned i = 0; i < 5; i++)
        release("realloc", b[i], 5000, i);
    expect_phase("realloc", 10, 10, 25250, 25250, 0, 0);

    if (with_reallocarray) {
        phase("reallocarray");
        for (unsigned i = 0; i < 4; i++) {
            void *p = checked("reallocarray", reallocarray(NULL, 10, 30), 8, 300, i);
            p = reallocarray(p, 20, 30);
            if (!p || !filled(p, 300, i))
                die("reallocarray lost the contents");
            b[i] = checked("reallocarray", p, 8, 600, i);
        }
        size_t volatile huge = (size_t)1 << 62; /* opaque, or the compiler flags the call */
        if (reallocarray(NULL, huge, 8))
            die("reallocarray did not report the overflow");
        for (unsigned i = 0; i < 4; i++)
            release("reallocarray", b[i], 600, i);
        expect_phase("reallocarray", 8, 8, 3600, 3600, 0, 0);
    }

    phase("aligned");
    for (unsigned i = 0; i < 3; i++) {
        b[i] = checked("memalign", memalign(64, 200), 64, 200, i);
        if (posix_memalign(&b[3 + i], 128, 300))
            die("posix_memalign failed");
        checked("posix_memalign", b[3 + i], 128, 300, 3 + i);
        b[6 + i] = checked("aligned_alloc", aligned_alloc(256, 512), 256, 512, 6 + i);
    }
    for (unsigned i = 0; i < 3; i++) {
        release("memalign", b[i], 200, i);
        release("posix_memalign", b[3 + i], 300, 3 + i);
        release("aligned_alloc", b[6 + i], 512, 6 + i);
    }
    expect_phase("aligned", 9, 9, 3036, 3036, 0, 0);

    phase("valloc");
    for (unsigned i = 0; i < 2; i++)
        b[i] = checked("valloc", valloc(1000), 4096, 1000, i);
    for (unsigned i = 0; i < 2; i++)
        release("valloc", b[i], 1000, i);
    expect_phase("valloc", 2, 2, 2000, 2000, 0, 0);

    phase("leak");
    for (unsigned i = 0; i < 3; i++)
        b[i] = checked("malloc", malloc(77), 8, 77, i);
    expect_phase("leak", 3, 0, 231, 0, 3, 231);

    phase("free_leaked");
    for (unsigned i = 0; i < 3; i++)
        release("free", b[i], 77, i);
    expect_phase("free_leaked", 0, 3, 0, 231, -3, -231);
    churn_epoch_begin();
}

static inline void pattern_print(void)
{
    phases_print();
    for (int i = 0; i < nexpect; i++)
        printf("expect %s %ld %ld %ld %ld %ld %ld\n", expectations[i].name,
               expectations[i].allocs, expectations[i].frees, expectations[i].alloc_bytes,
               expectations[i].free_bytes, expectations[i].live_count,
               expectations[i].live_bytes);
}

#endif
