/*
 * An executable that carries mimalloc as its malloc: it defines and exports the malloc family
 * as mimalloc's entry points (what mimalloc's static override does), here over Debian's
 * libmimalloc.so, so every malloc call of the process binds to the executable and libchurn
 * sees them only through the patch way.  Checks that mimalloc answers (its usable size for
 * 100 bytes), then runs the pattern of static_pattern.h.
 */
#include <errno.h>
#include <mimalloc.h>

#include "static_pattern.h"

/* noinline: calls in this file must reach the exported functions, as other files' do */
#define ENTRY __attribute__((noinline))
ENTRY void *malloc(size_t size) { return mi_malloc(size); }
ENTRY void free(void *p) { mi_free(p); }
ENTRY void *calloc(size_t n, size_t size) { return mi_calloc(n, size); }
ENTRY void *realloc(void *p, size_t size) { return mi_realloc(p, size); }
ENTRY void *reallocarray(void *p, size_t n, size_t size) { return mi_reallocarray(p, n, size); }
ENTRY void *memalign(size_t align, size_t size) { return mi_memalign(align, size); }
ENTRY void *aligned_alloc(size_t align, size_t size) { return mi_aligned_alloc(align, size); }
ENTRY void *valloc(size_t size) { return mi_valloc(size); }
ENTRY size_t malloc_usable_size(void *p) { return mi_usable_size(p); }
ENTRY int posix_memalign(void **out, size_t align, size_t size)
{
    return mi_posix_memalign(out, align, size);
}

int main(void)
{
    void *p = malloc(100);
    size_t usable = malloc_usable_size(p);
    int ours = mi_is_in_heap_region(p);
    free(p);
    if (usable != 112 || !ours)
        die("malloc(100): %zu usable bytes, in mimalloc's heap %d: not mimalloc's", usable, ours);
    run_pattern(1);
    printf("allocator mimalloc %d\n", mi_version());
    pattern_print();
    return 0;
}
