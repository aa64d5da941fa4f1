/*
 * The allocator next in line (glibc, or a preloaded tcmalloc/jemalloc after libchurn), found
 * with dlsym(RTLD_NEXT).  dlsym itself calls calloc, so calls made while the lookup runs are
 * served from a small bootstrap heap inside libchurn; their blocks are recognised by address
 * and never handed to the real free.
 */
#include <dlfcn.h>
#include <string.h>

#include "shim.h"

churn_real churn_next;

#define BOOTSTRAP_BYTES (256u << 10)
static _Alignas(64) uint8_t bootstrap_heap[BOOTSTRAP_BYTES];
static _Atomic size_t bootstrap_used;

/* Each bootstrap block is preceded by its size, so realloc and malloc_usable_size work. */
void *churn_bootstrap_alloc(size_t size, size_t align)
{
    if (align < 16)
        align = 16;
    size_t need = size + align + 16;
    size_t off = atomic_fetch_add(&bootstrap_used, need);
    if (off + need > BOOTSTRAP_BYTES)
        return NULL;
    uintptr_t start = (uintptr_t)bootstrap_heap + off + 16;
    uintptr_t p = (start + align - 1) & ~(uintptr_t)(align - 1);
    ((size_t *)p)[-1] = size;
    return (void *)p;
}

int churn_bootstrap_owns(const void *p)
{
    return (const uint8_t *)p >= bootstrap_heap && (const uint8_t *)p < bootstrap_heap + BOOTSTRAP_BYTES;
}

size_t churn_bootstrap_size(const void *p)
{
    return ((const size_t *)p)[-1];
}

static _Atomic int resolving;

void churn_real_resolve(void)
{
    if (churn_next.free)
        return;
    /* A nested call (dlsym's calloc) finds resolving set and uses the bootstrap heap. */
    if (atomic_exchange(&resolving, 1))
        return;
    churn_real r;
    memset(&r, 0, sizeof r);
#define NEXT(field, name) r.field = dlsym(RTLD_NEXT, name)
    NEXT(malloc, "malloc");
    NEXT(calloc, "calloc");
    NEXT(realloc, "realloc");
    NEXT(memalign, "memalign");
    NEXT(posix_memalign, "posix_memalign");
    NEXT(aligned_alloc, "aligned_alloc");
    NEXT(valloc, "valloc");
    NEXT(pvalloc, "pvalloc");
    NEXT(usable_size, "malloc_usable_size");
    NEXT(mmap, "mmap");
    NEXT(munmap, "munmap");
    NEXT(mremap, "mremap");
    NEXT(madvise, "madvise");
    NEXT(brk, "brk");
    NEXT(sbrk, "sbrk");
    NEXT(exit_, "_exit");
    NEXT(Exit, "_Exit");
    NEXT(fork, "fork");
    void (*real_free)(void *) = dlsym(RTLD_NEXT, "free");
#undef NEXT
    churn_next = r;
    /* free last: it is the flag that says the table is complete */
    atomic_store((_Atomic(void (*)(void *)) *)&churn_next.free, real_free);
    atomic_store(&resolving, 0);
}

/* The next definition of any other function libchurn wraps (exec, signals, descriptors,
   C++ operators), looked up on first use and kept in the caller's slot. */
void *churn_next_of(void *_Atomic *slot, const char *name)
{
    void *f = atomic_load_explicit(slot, memory_order_acquire);
    if (!f) {
        f = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(slot, f, memory_order_release);
    }
    return f;
}
