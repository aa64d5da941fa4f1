/* Every allocation call of the C family and the realloc edges (test/t_referee.sh): a buffer
   grown one byte at a time (mostly in place), realloc(NULL, n), realloc(p, 0), reallocarray,
   calloc, memalign, posix_memalign, aligned_alloc, valloc, pvalloc, and failures that must
   count as nothing (calloc overflow, posix_memalign with a bad alignment).  Live at exit: one
   block of each kind, 7 in all. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline void escape(void *p) { __asm__ volatile("" : : "g"(p) : "memory"); }

void *kept[7];

int main(void)
{
    char *buf = NULL;
    for (size_t n = 1; n <= 3000; n++) {
        buf = realloc(buf, n);
        buf[n - 1] = (char)n;
    }
    free(buf);
    for (int i = 0; i < 100; i++) {
        void *p = realloc(NULL, 40);
        escape(p);
        p = realloc(p, 0); /* glibc frees p and returns NULL */
        escape(p);
        int *a = reallocarray(NULL, 10, sizeof(int));
        a = reallocarray(a, 1000, sizeof(int));
        escape(a);
        free(a);
        void *c = calloc(7, 13);
        escape(c);
        free(c);
        void *m = memalign(64, 200);
        escape(m);
        free(m);
        void *pm = NULL;
        if (posix_memalign(&pm, 128, 300))
            return 1;
        free(pm);
        void *al = aligned_alloc(256, 512);
        escape(al);
        free(al);
        void *v = valloc(100);
        escape(v);
        free(v);
        void *pv = pvalloc(5000);
        escape(pv);
        free(pv);
    }
    volatile size_t huge = SIZE_MAX / 2; /* not a constant the compiler rejects */
    if (calloc(huge, 4) != NULL)
        return 1;
    void *bad;
    if (posix_memalign(&bad, 3, 10) != EINVAL)
        return 1;
    kept[0] = malloc(11);
    kept[1] = calloc(3, 5);
    kept[2] = realloc(NULL, 17);
    kept[3] = memalign(32, 19);
    if (posix_memalign(&kept[4], 64, 23))
        return 1;
    kept[5] = valloc(29);
    kept[6] = pvalloc(31);
    return 0;
}
