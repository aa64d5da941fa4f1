/*
 * Two different libraries from one source for test/programs/dl.c: built with -DLIB_B it has
 * a padding function first, so its allocating function sits at another offset than library
 * A's, and an address in A's code means something else in B.  With -DUNNAMED_FILL the
 * allocation is made by a static function that alloc_in_a/alloc_in_b calls.
 */
#include <stdlib.h>
#include <string.h>

#ifdef LIB_B
__attribute__((noinline)) int padding_in_b(int x)
{
    volatile int v[64];
    for (int i = 0; i < 64; i++)
        v[i] = x * i;
    return v[x & 63] + v[(x + 7) & 63] * 3;
}
#define ALLOC_FN alloc_in_b
#else
#define ALLOC_FN alloc_in_a
#endif

#ifdef UNNAMED_FILL
/* Static: in a stripped library it has no symbol, so its frame shows as module+offset. */
static __attribute__((noinline)) void *fill(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 0x3c, n);
    return p;
}

__attribute__((noinline)) void *ALLOC_FN(size_t n)
{
    void *p = fill(n);
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
    return p;
}
#else
__attribute__((noinline)) void *ALLOC_FN(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 0x3c, n);
    return p;
}
#endif
