/*
 * The aligned allocation family, one epoch per function, each with its own count: every
 * result is checked for its alignment and usable size, and freed in the same epoch.
 * posix_memalign with an invalid alignment must fail with EINVAL and allocate nothing.
 * Prints `expect NAME COUNT BYTES` per epoch (pvalloc's BYTES is the requested total; its
 * blocks are whole pages, which the test also accepts).
 */
#include <errno.h>
#include <malloc.h>
#include <unistd.h>

#include "probe.h"

#define MAX_BLOCKS 8

static void *blocks[MAX_BLOCKS];
static size_t sizes[MAX_BLOCKS];
static int count;

static void check_block(const char *fn, void *p, size_t align, size_t size)
{
    if (!p)
        die("%s(%zu, %zu) failed", fn, align, size);
    if ((uintptr_t)p % align)
        die("%s(%zu, %zu) returned %p, not aligned", fn, align, size, p);
    if (malloc_usable_size(p) < size)
        die("%s(%zu, %zu): usable size %zu", fn, align, size, malloc_usable_size(p));
    fill(p, size, (unsigned)count);
    blocks[count] = p;
    sizes[count] = size;
    count++;
}

static void free_blocks(const char *fn)
{
    for (int i = 0; i < count; i++) {
        if (!filled(blocks[i], sizes[i], (unsigned)i))
            die("%s: block %d was overwritten", fn, i);
        free(blocks[i]);
    }
    count = 0;
}

int main(void)
{
    static const size_t memalign_aligns[] = {16, 32, 64, 128, 256, 4096, 65536};
    static const size_t posix_aligns[] = {8, 16, 64, 512, 8192};
    static const size_t aligned_alloc_aligns[] = {16, 64, 256, 1024};
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes;

    phase("memalign");
    for (size_t i = 0; i < sizeof memalign_aligns / sizeof *memalign_aligns; i++)
        check_block("memalign", memalign(memalign_aligns[i], 200), memalign_aligns[i], 200);
    free_blocks("memalign");

    phase("posix_memalign");
    for (size_t i = 0; i < sizeof posix_aligns / sizeof *posix_aligns; i++) {
        void *p = NULL;
        int err = posix_memalign(&p, posix_aligns[i], 300);
        if (err)
            die("posix_memalign(%zu, 300) failed: %d", posix_aligns[i], err);
        check_block("posix_memalign", p, posix_aligns[i], 300);
    }
    void *bad = NULL;
    if (posix_memalign(&bad, 3, 300) != EINVAL || posix_memalign(&bad, 24, 300) != EINVAL)
        die("posix_memalign accepted an alignment that is not a power of two");
    free_blocks("posix_memalign");

    phase("aligned_alloc");
    bytes = 0;
    for (size_t i = 0; i < sizeof aligned_alloc_aligns / sizeof *aligned_alloc_aligns; i++) {
        size_t a = aligned_alloc_aligns[i];
        check_block("aligned_alloc", aligned_alloc(a, 2 * a), a, 2 * a);
        bytes += 2 * a;
    }
    free_blocks("aligned_alloc");

    phase("valloc");
    check_block("valloc", valloc(1000), page, 1000);
    check_block("valloc", valloc(5000), page, 5000);
    free_blocks("valloc");

    phase("pvalloc");
    check_block("pvalloc", pvalloc(1000), page, 1000);
    check_block("pvalloc", pvalloc(5000), page, 5000);
    free_blocks("pvalloc");

    phase("end");
    phases_print();
    printf("expect memalign 7 1400\n");
    printf("expect posix_memalign 5 1500\n");
    printf("expect aligned_alloc 4 %zu\n", bytes);
    printf("expect valloc 2 6000\n");
    printf("expect pvalloc 2 6000 %zu\n", (1000 + page - 1) / page * page +
                                              (5000 + page - 1) / page * page);
    return 0;
}
