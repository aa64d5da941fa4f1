/*
 * The malloc family's contract at its edges, printed one line per call so that a run under
 * the shim can be compared with a run without it, line by line: NULL or not, errno, return
 * codes, whether posix_memalign left its output alone, whether the usable size covers the
 * request.  Nothing address-dependent is printed (alignment slack, usable sizes).
 * `alloc_api no-pvalloc` leaves pvalloc out, for jemalloc, which defines none (glibc's
 * block then reaches jemalloc's free and the program crashes, with or without the shim).
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void show(const char *name, void *p, size_t want)
{
    int err = errno;
    printf("%-26s %s errno=%d", name, p ? "block" : "NULL", err);
    if (p)
        printf(" covers=%d", malloc_usable_size(p) >= want);
    printf("\n");
    free(p);
}

#define CALL(expr, want)                                                                     \
    do {                                                                                     \
        errno = 0;                                                                           \
        void *p_ = (expr);                                                                   \
        show(#expr, p_, want);                                                               \
    } while (0)

/* Sizes the compiler cannot see through (it folds some calls with constant sizes). */
static volatile size_t max_size = SIZE_MAX;

int main(int argc, char **argv)
{
    int pvalloc_too = argc < 2 || strcmp(argv[1], "no-pvalloc");
    size_t big = max_size;
    CALL(malloc(0), 0);
    CALL(malloc(big), 0);
    CALL(calloc(0, 0), 0);
    CALL(calloc(big / 2, 3), 0);
    CALL(realloc(NULL, 10), 10);
    CALL(reallocarray(NULL, 3, 5), 15);
    CALL(reallocarray(NULL, big / 2, 3), 0);
    CALL(aligned_alloc(64, 100), 100);
    CALL(aligned_alloc(64, big), 0);
    CALL(memalign(4096, 1), 1);
    CALL(memalign(64, big), 0);
    CALL(valloc(1), 1);
    CALL(valloc(big), 0);
    if (pvalloc_too) {
        CALL(pvalloc(1), 1);
        CALL(pvalloc(0), 0);
        CALL(pvalloc(big), 0);
        CALL(pvalloc(big - 4000), 0);
    }

    void *p = malloc(10);
    errno = 0;
    void *q = realloc(p, big);
    printf("realloc(p, big) %s errno=%d\n", q ? "block" : "NULL", errno);
    free(q ? q : p);

    static const size_t aligns[] = {0, 1, 4, 8, 12, 16, 24, 32, 4096};
    for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++) {
        void *out = &p;
        errno = 0;
        int rc = posix_memalign(&out, aligns[i], 100);
        printf("posix_memalign(%zu, 100) rc=%d errno=%d out=%s\n", aligns[i], rc, errno,
               out == &p ? "untouched" : "set");
        if (out != &p)
            free(out);
    }
    void *out = &p;
    int rc = posix_memalign(&out, 64, big);
    printf("posix_memalign(64, big) rc=%d out=%s\n", rc, out == &p ? "untouched" : "set");

    errno = 1234;
    free(NULL);
    printf("free(NULL) errno=%d\n", errno);
    p = malloc(100);
    errno = 1234;
    free(p);
    printf("free(small) errno=%d\n", errno);
    p = malloc(16 << 20);
    errno = 1234;
    free(p);
    printf("free(mapped) errno=%d\n", errno);
    printf("malloc_usable_size(NULL)=%zu\n", malloc_usable_size(NULL));
    return 0;
}
