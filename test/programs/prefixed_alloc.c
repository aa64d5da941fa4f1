/*
 * Stands in for a jemalloc built with a symbol prefix (--with-jemalloc-prefix=je_, or the
 * _rjem_ of Rust's tikv-jemallocator), which Debian does not ship: the executable defines
 * PREFIX malloc, calloc, realloc, free, malloc_usable_size and mallctl (on glibc's allocator,
 * with a size header) and calls them by those names only.  libchurn must trace them through
 * the patch way in, exactly, name them in the report and read the books through PREFIX
 * mallctl ("stats.mapped" answers MAPPED_MARK, so the test can recognise it).  Under
 * PREFIX=rp and sn_ the same names are rpmalloc's and snmalloc's (their mallctl unused);
 * -DHEAP_FREE_ALL adds rpmalloc's rpmalloc_heap_free_all.
 */
#include <malloc.h>
#include <time.h>

#include "static_pattern.h"

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define P(name) CAT(PREFIX, name)
#define MAPPED_MARK 987654321u

__attribute__((noinline)) void *P(malloc)(size_t n)
{
    size_t *h = malloc(n + 16);
    if (!h)
        return NULL;
    h[0] = n;
    return h + 2;
}

__attribute__((noinline)) void *P(calloc)(size_t n, size_t size)
{
    void *p = P(malloc)(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

__attribute__((noinline)) void P(free)(void *p)
{
    if (p)
        free((size_t *)p - 2);
}

__attribute__((noinline)) size_t P(malloc_usable_size)(void *p)
{
    return ((size_t *)p)[-2];
}

__attribute__((noinline)) void *P(realloc)(void *p, size_t n)
{
    void *q = P(malloc)(n);
    if (q && p) {
        size_t old = P(malloc_usable_size)(p);
        memcpy(q, p, old < n ? old : n);
        P(free)(p);
    }
    return q;
}

__attribute__((noinline)) int P(mallctl)(const char *name, void *oldp, size_t *oldlenp,
                                         void *newp, size_t newlen)
{
    (void)newp;
    (void)newlen;
    if (!strcmp(name, "epoch"))
        return 0;
    if (!oldp || !oldlenp || *oldlenp != sizeof(size_t))
        return 22;
    *(size_t *)oldp = !strcmp(name, "stats.mapped") ? MAPPED_MARK : 0;
    return 0;
}

#ifdef HEAP_FREE_ALL
/* rpmalloc's bulk free of a heap, which names none of the blocks it frees */
__attribute__((noinline)) void P(malloc_heap_free_all)(void *heap)
{
    (void)heap;
}
#endif

int main(void)
{
    void *b[100];
    phase("prefixed");
    for (unsigned i = 0; i < 100; i++) {
        b[i] = P(malloc)(300);
        fill(b[i], 300, i);
    }
    for (unsigned i = 0; i < 100; i++)
        P(free)(b[i]);
    expect_phase("prefixed", 100, 100, 30000, 30000, 0, 0);
    phase("calloc_realloc");
    for (unsigned i = 0; i < 20; i++) {
        b[i] = P(calloc)(4, 25);
        b[i] = P(realloc)(b[i], 1000);
    }
    for (unsigned i = 0; i < 20; i++)
        P(free)(b[i]);
    expect_phase("calloc_realloc", 40, 40, 22000, 22000, 0, 0);
    /* long enough for the writer to read the books at least once */
    for (int i = 0; i < 30; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    phase("end");
    churn_epoch_begin();
    pattern_print();
    return 0;
}
