/*
 * Blocks of every kind glibc hands out, kept to the end: small and large, from chunks split
 * off free ones of other sizes, mapped ones, calloc's, memalign's and realloc's.  At the end
 * the program prints, for each callsite, "site NAME COUNT BYTES USABLE": its live blocks,
 * their requested bytes and the sum of malloc_usable_size over them, for t_usable_sizes.sh
 * to compare with the trace.
 */
#include <malloc.h>

#include "probe.h"

#define N 700

enum { FILLER, MALLOC, CALLOC, MEMALIGN, REALLOC, SITES };
static const char *const names[SITES] = {"site_filler", "site_malloc", "site_calloc",
                                         "site_memalign", "site_realloc"};
static void *kept[SITES][N];
static size_t asked[SITES][N];

/* Each a callsite of its own: keep() after the call, so that none is a tail call, and no
   two folded into one. */
static __attribute__((noinline, no_icf)) void *site_filler(size_t n)
{
    void *p = malloc(n);
    keep(p);
    return p;
}
static __attribute__((noinline, no_icf)) void *site_malloc(size_t n)
{
    void *p = malloc(n);
    keep(p);
    return p;
}
static __attribute__((noinline, no_icf)) void *site_calloc(size_t n)
{
    void *p = calloc(1, n);
    keep(p);
    return p;
}
static __attribute__((noinline, no_icf)) void *site_memalign(size_t n)
{
    void *p = memalign(64, n);
    keep(p);
    return p;
}
static __attribute__((noinline, no_icf)) void *site_realloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    keep(q);
    return q;
}

/* Mostly small sizes, every 50th above a page, every 97th large enough to be mapped. */
static size_t size_at(unsigned i)
{
    if (i % 97 == 96)
        return 300000 + 13 * i;
    if (i % 50 == 49)
        return 70000 + i;
    return 1 + (i * 37) % 600;
}

int main(void)
{
    /* a fixed threshold: a large free before main raises glibc's dynamic one, and the large
       sizes would not be mapped */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    /* holes of assorted sizes between live fillers, which the later blocks are split from */
    void *holes[N];
    for (unsigned i = 0; i < N; i++) {
        holes[i] = malloc(1 + (i * 53) % 900);
        asked[FILLER][i] = size_at(i * 5 + 1);
        kept[FILLER][i] = site_filler(asked[FILLER][i]);
        if (!holes[i] || !kept[FILLER][i])
            die("malloc failed\n");
    }
    for (unsigned i = 0; i < N; i++)
        free(holes[i]);
    for (unsigned i = 0; i < N; i++) {
        size_t n = size_at(i);
        asked[MALLOC][i] = n;
        kept[MALLOC][i] = site_malloc(n);
        asked[CALLOC][i] = n + 3;
        kept[CALLOC][i] = site_calloc(n + 3);
        asked[MEMALIGN][i] = n + 5;
        kept[MEMALIGN][i] = site_memalign(n + 5);
        void *r = NULL;
        for (unsigned k = 0; k < 3; k++) {
            asked[REALLOC][i] = n / (3 - k) + k;
            r = site_realloc(r, asked[REALLOC][i]);
        }
        kept[REALLOC][i] = r;
        for (unsigned s = MALLOC; s < SITES; s++)
            if (!kept[s][i])
                die("allocation failed\n");
    }
    for (unsigned s = 0; s < SITES; s++) {
        size_t bytes = 0, usable = 0;
        for (unsigned i = 0; i < N; i++) {
            bytes += asked[s][i];
            usable += malloc_usable_size(kept[s][i]);
        }
        printf("site %s %u %zu %zu\n", names[s], N, bytes, usable);
    }
    return 0;
}
