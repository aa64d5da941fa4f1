/*
 * A program that defines its own allocator: malloc, free, calloc, realloc, reallocarray,
 * memalign, posix_memalign, aligned_alloc, valloc and malloc_usable_size, over a bump region
 * with free lists per power-of-two class.  Being defined in the executable, they are what
 * every malloc call of the process binds to (libc's and libchurn's included), so libchurn can
 * only see them through the patch way.  Checks that its own allocator answered (a call count,
 * and usable sizes that are its classes), then runs the pattern of static_pattern.h.  Built
 * with -DOWN_MALLOC_NO_MAIN it is only the allocator, for own_new.cc.
 */
#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "static_pattern.h"

#define CLASSES 40
#define HEADER 16u

/* Every block: [pad][header: class, offset from the raw block][user bytes]. */
struct header {
    uint32_t cls;
    uint32_t offset;
    uint64_t magic;
};
#define MAGIC 0x6f776e6d616c6c63ull

static atomic_flag lock = ATOMIC_FLAG_INIT;
static void *free_lists[CLASSES];
static unsigned char *bump, *bump_end;
long own_calls;

static void lock_heap(void)
{
    while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
        ;
}

static void unlock_heap(void) { atomic_flag_clear_explicit(&lock, memory_order_release); }

static unsigned class_of(size_t bytes)
{
    unsigned c = 4;
    while (c < CLASSES && ((size_t)1 << c) < bytes)
        c++;
    return c;
}

static void *raw_alloc(unsigned cls)
{
    size_t bytes = (size_t)1 << cls;
    void *p = free_lists[cls];
    if (p) {
        free_lists[cls] = *(void **)p;
        return p;
    }
    if (bytes > (size_t)(bump_end - bump)) {
        size_t chunk = bytes > (64u << 20) ? bytes : (64u << 20);
        void *m = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        bump = m;
        bump_end = bump + chunk;
    }
    p = bump;
    bump += bytes;
    return p;
}

static struct header *header_of(void *p)
{
    struct header *h = (struct header *)((unsigned char *)p - HEADER);
    if (h->magic != MAGIC)
        abort();
    return h;
}

__attribute__((noinline)) static void *aligned_block(size_t align, size_t size)
{
    if (align < HEADER)
        align = HEADER;
    if (size > ((size_t)1 << (CLASSES - 2)))
        return NULL;
    unsigned cls = class_of(size + align + HEADER);
    lock_heap();
    own_calls++;
    unsigned char *raw = raw_alloc(cls);
    unlock_heap();
    if (!raw)
        return NULL;
    uintptr_t user = ((uintptr_t)raw + HEADER + align - 1) & ~(uintptr_t)(align - 1);
    struct header *h = (struct header *)(user - HEADER);
    h->cls = cls;
    h->offset = (uint32_t)(user - (uintptr_t)raw);
    h->magic = MAGIC;
    return (void *)user;
}

__attribute__((noinline)) size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    struct header *h = header_of(p);
    return ((size_t)1 << h->cls) - h->offset;
}

__attribute__((noinline)) void *malloc(size_t size)
{
    return aligned_block(HEADER, size);
}

__attribute__((noinline)) void free(void *p)
{
    if (!p)
        return;
    struct header *h = header_of(p);
    h->magic = 0;
    void *raw = (unsigned char *)p - h->offset;
    lock_heap();
    own_calls++;
    *(void **)raw = free_lists[h->cls];
    free_lists[h->cls] = raw;
    unlock_heap();
}

__attribute__((noinline)) void *calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = aligned_block(HEADER, total);
    if (p)
        memset(p, 0, total);
    return p;
}

__attribute__((noinline)) void *realloc(void *p, size_t size)
{
    if (!p)
        return malloc(size);
    if (!size) {
        free(p);
        return NULL;
    }
    size_t have = malloc_usable_size(p);
    void *q = malloc(size);
    if (q) {
        memcpy(q, p, have < size ? have : size);
        free(p);
    }
    return q;
}

__attribute__((noinline)) void *reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, total);
}

__attribute__((noinline)) void *memalign(size_t align, size_t size)
{
    return aligned_block(align, size);
}

__attribute__((noinline)) void *aligned_alloc(size_t align, size_t size)
{
    return aligned_block(align, size);
}

__attribute__((noinline)) int posix_memalign(void **out, size_t align, size_t size)
{
    if (!align || (align & (align - 1)) || align % sizeof(void *))
        return EINVAL;
    void *p = aligned_block(align, size);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

__attribute__((noinline)) void *valloc(size_t size)
{
    return aligned_block(4096, size);
}

#ifndef OWN_MALLOC_NO_MAIN
int main(void)
{
    void *p = malloc(100);
    size_t usable = malloc_usable_size(p);
    free(p);
    if (usable != 256 - HEADER) /* 100 + alignment + header, rounded up to 256 */
        die("malloc(100) has %zu usable bytes, not own_malloc's %u", usable, 256 - HEADER);
    long before = own_calls;
    run_pattern(1);
    /* every allocation and free of the pattern, at least, came here */
    if (own_calls - before < 49 + 49)
        die("own allocator saw %ld calls of the pattern's 98", own_calls - before);
    printf("allocator own_malloc, %ld calls\n", own_calls - before);
    pattern_print();
    return 0;
}
#endif
