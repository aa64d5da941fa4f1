/*
 * An allocator called by its own names, not through malloc: mimalloc's API (built with
 * -DNAMED_MIMALLOC, linked with libmimalloc) or jemalloc's *allocx family (-DNAMED_JEMALLOC,
 * linked with jemalloc's static library or its shared one).  Each phase makes a known number
 * of allocations of known sizes and frees them; `expect` lines (static_pattern.h) carry the
 * figures every epoch must show.  A malloc phase checks that the same allocator reached
 * through malloc as well is not counted twice.  With -DMIMALLOC_STATIC mimalloc is linked into
 * the executable from a static archive that does not override malloc: malloc stays glibc's.
 */
#include <malloc.h>

#include "static_pattern.h"

#ifdef NAMED_MIMALLOC
#include <mimalloc.h>
#define ALLOC(n) mi_malloc(n)
#define FREE(p, n) mi_free(p)
#define USABLE(p) mi_usable_size(p)
#else
#include <jemalloc/jemalloc.h>
#define ALLOC(n) mallocx(n, 0)
#define FREE(p, n) sdallocx(p, n, 0)
#define USABLE(p) sallocx(p, 0)
#endif

#define N 1000

static void *b[N];

static void own(const char *fn, void *p, size_t size, unsigned tag)
{
    if (!p)
        die("%s(%zu) failed", fn, size);
    if (USABLE(p) < size)
        die("%s(%zu): usable size %zu", fn, size, (size_t)USABLE(p));
    fill(p, size, tag);
}

static void own_malloc(void *p, size_t size, unsigned tag)
{
#ifdef MIMALLOC_STATIC
    if (!p || malloc_usable_size(p) < size)
        die("malloc(%zu) failed or is short", size);
    fill(p, size, tag);
#else
    own("malloc", p, size, tag);
#endif
}

int main(void)
{
    phase("named");
    for (unsigned i = 0; i < N; i++)
        own("alloc", b[i] = ALLOC(4096), 4096, i);
    for (unsigned i = 0; i < N; i++)
        FREE(b[i], 4096);
    expect_phase("named", N, N, N * 4096L, N * 4096L, 0, 0);

    phase("plain_malloc");
    for (unsigned i = 0; i < 20; i++)
        own_malloc(b[i] = malloc(64), 64, i);
    for (unsigned i = 0; i < 20; i++)
        free(b[i]);
    expect_phase("plain_malloc", 20, 20, 1280, 1280, 0, 0);

#ifdef NAMED_MIMALLOC
    phase("heap_new"); /* a heap's own block is mimalloc's bookkeeping, never recorded */
    mi_heap_t *heap = mi_heap_new();
    expect_phase("heap_new", 0, 0, 0, 0, 0, 0);
    phase("heap");
    for (unsigned i = 0; i < 300; i++)
        own("mi_heap_malloc", b[i] = mi_heap_malloc(heap, 100), 100, i);
    for (unsigned i = 0; i < 100; i++)
        own("mi_heap_calloc", b[300 + i] = mi_heap_calloc(heap, 3, 40), 120, i);
    for (unsigned i = 0; i < 400; i++)
        mi_free(b[i]);
    expect_phase("heap", 400, 400, 42000, 42000, 0, 0);
    phase("heap_delete");
    mi_heap_delete(heap);
    expect_phase("heap_delete", 0, 0, 0, 0, 0, 0);

    /* mi_heap_destroy frees the 150 blocks left without a free of each */
    phase("heap_destroy");
    mi_heap_t *doomed = mi_heap_new();
    for (unsigned i = 0; i < 200; i++)
        own("mi_heap_malloc", b[i] = mi_heap_malloc(doomed, 300), 300, i);
    for (unsigned i = 0; i < 50; i++)
        mi_free(b[i]);
    mi_heap_destroy(doomed);
    expect_phase("heap_destroy", 200, 200, 60000, 60000, 0, 0);

    /* mi_expand grows a block within its usable size, in place, or fails */
    phase("expand");
    long grown = 0;
    for (unsigned i = 0; i < 40; i++) {
        void *p = mi_malloc(100);
        own("mi_malloc", p, 100, i);
        size_t usable = mi_usable_size(p);
        if (usable <= 100 || mi_expand(p, usable) != p)
            die("mi_expand(%zu) did not grow a block of 100 in place", usable);
        if (mi_expand(p, usable + 65536))
            die("mi_expand grew a block past its usable size");
        b[i] = p;
        grown += (long)usable;
    }
    for (unsigned i = 0; i < 40; i++)
        mi_free(b[i]);
    expect_phase("expand", 80, 80, 40 * 100L + grown, 40 * 100L + grown, 0, 0);

    phase("calloc_aligned_new");
    for (unsigned i = 0; i < 50; i++) {
        own("mi_calloc", b[3 * i] = mi_calloc(5, 20), 100, i);
        own("mi_malloc_aligned", b[3 * i + 1] = mi_malloc_aligned(200, 64), 200, i);
        own("mi_new", b[3 * i + 2] = mi_new(48), 48, i);
        if ((uintptr_t)b[3 * i + 1] % 64)
            die("mi_malloc_aligned: not aligned");
    }
    for (unsigned i = 0; i < 150; i++)
        mi_free(b[i]);
    expect_phase("calloc_aligned_new", 150, 150, 50 * 348L, 50 * 348L, 0, 0);

    phase("realloc");
    for (unsigned i = 0; i < 40; i++) {
        void *p = mi_malloc(50);
        own("mi_malloc", p, 50, i);
        p = mi_realloc(p, 5000);
        if (!p || !filled(p, 50, i))
            die("mi_realloc lost the contents");
        b[i] = p;
    }
    for (unsigned i = 0; i < 40; i++)
        mi_free(b[i]);
    expect_phase("realloc", 80, 80, 40 * 5050L, 40 * 5050L, 0, 0);
#else
    phase("zero_realloc");
    for (unsigned i = 0; i < 40; i++) {
        void *p = mallocx(50, MALLOCX_ZERO);
        for (unsigned k = 0; p && k < 50; k++)
            if (((const char *)p)[k])
                die("mallocx(MALLOCX_ZERO): byte %u not zero", k);
        own("mallocx", p, 50, i);
        p = rallocx(p, 5000, 0);
        if (!p || !filled(p, 50, i))
            die("rallocx lost the contents");
        b[i] = p;
    }
    for (unsigned i = 0; i < 40; i++)
        dallocx(b[i], 0);
    expect_phase("zero_realloc", 80, 80, 40 * 5050L, 40 * 5050L, 0, 0);
#endif

    phase("leak");
    for (unsigned i = 0; i < 3; i++)
        own("alloc", b[i] = ALLOC(77), 77, i);
    expect_phase("leak", 3, 0, 231, 0, 3, 231);
    phase("free_leaked");
    for (unsigned i = 0; i < 3; i++)
        FREE(b[i], 77);
    expect_phase("free_leaked", 0, 3, 0, 231, -3, -231);
    churn_epoch_begin();
    pattern_print();
    return 0;
}
