/*
 * realloc and its relatives at their edges, one epoch per case.  A realloc is traced as a
 * free of the old block plus an allocation of the new one; a call that fails or frees
 * nothing is not an event.  After the phase lines the program prints, per case,
 * `expect NAME ALLOCS FREES ALLOC_BYTES FREE_BYTES`, and it checks every result itself
 * (contents kept across a move, zeroed calloc, NULL and errno on overflow).
 */
#include <errno.h>

#include "probe.h"

#define HUGE (SIZE_MAX / 2)

struct expectation {
    const char *name;
    unsigned allocs, frees;
    size_t alloc_bytes, free_bytes;
};

static const struct expectation expected[] = {
    {"realloc_null", 1, 0, 100, 0},
    {"realloc_zero", 0, 1, 0, 100},
    {"shrink", 2, 1, 1000 + 200, 1000},
    {"grow", 1, 1, 100000, 200},
    {"grow_small", 2, 1, 24 + 40, 24},
    {"failed_realloc", 0, 0, 0, 0},
    {"reallocarray", 2, 2, 300 + 600, 300 + 600},
    {"calloc", 1, 1, 100, 100},
    {"zero_sizes", 2, 2, 0, 0},
    {"free_null", 0, 0, 0, 0},
    {"release", 0, 2, 0, 100000 + 40},
};

/* realloc through a pointer the compiler cannot see through, so no call is folded away. */
static void *(*volatile realloc_fn)(void *, size_t) = realloc;
static void *(*volatile reallocarray_fn)(void *, size_t, size_t) = reallocarray;
static void *(*volatile calloc_fn)(size_t, size_t) = calloc;
static void *(*volatile malloc_fn)(size_t) = malloc;
static void (*volatile free_fn)(void *) = free;

int main(void)
{
    phase("realloc_null");
    unsigned char *p = realloc_fn(NULL, 100);
    if (!p)
        die("realloc(NULL, 100) failed");
    fill(p, 100, 1);

    phase("realloc_zero");
    if (!filled(p, 100, 1))
        die("realloc(NULL, 100) block was overwritten");
    if (realloc_fn(p, 0) != NULL)
        die("realloc(p, 0) did not free and return NULL");

    phase("shrink");
    unsigned char *q = malloc_fn(1000);
    if (!q)
        die("malloc(1000) failed");
    fill(q, 1000, 2);
    q = realloc_fn(q, 200);
    if (!q || !filled(q, 200, 2))
        die("realloc shrinking to 200 lost the contents");

    phase("grow");
    q = realloc_fn(q, 100000);
    if (!q || !filled(q, 200, 2))
        die("realloc growing to 100000 lost the contents");
    fill(q, 100000, 3);

    phase("grow_small");
    unsigned char *s = malloc_fn(24);
    if (!s)
        die("malloc(24) failed");
    fill(s, 24, 4);
    s = realloc_fn(s, 40);
    if (!s || !filled(s, 24, 4))
        die("realloc growing 24 to 40 lost the contents");
    fill(s, 40, 4);

    phase("failed_realloc");
    errno = 0;
    if (realloc_fn(q, HUGE) != NULL || errno != ENOMEM)
        die("realloc to %zu bytes did not fail with ENOMEM", (size_t)HUGE);
    if (!filled(q, 100000, 3))
        die("a failed realloc damaged the block");

    phase("reallocarray");
    unsigned char *a = reallocarray_fn(NULL, 10, 30);
    if (!a)
        die("reallocarray(NULL, 10, 30) failed");
    fill(a, 300, 5);
    a = reallocarray_fn(a, 20, 30);
    if (!a || !filled(a, 300, 5))
        die("reallocarray growing to 600 lost the contents");
    errno = 0;
    if (reallocarray_fn(a, SIZE_MAX / 2, 4) != NULL || errno != ENOMEM)
        die("reallocarray overflow did not fail with ENOMEM");
    free_fn(a);

    phase("calloc");
    unsigned char *c = calloc_fn(25, 4);
    if (!c)
        die("calloc(25, 4) failed");
    for (int i = 0; i < 100; i++)
        if (c[i])
            die("calloc returned dirty memory");
    if (calloc_fn(SIZE_MAX / 2, 4) != NULL)
        die("calloc overflow did not fail");
    free_fn(c);

    phase("zero_sizes");
    void *m0 = malloc_fn(0), *r0 = realloc_fn(NULL, 0);
    if (!m0 || !r0 || m0 == r0)
        die("malloc(0) / realloc(NULL, 0) did not return distinct blocks");
    free_fn(m0);
    free_fn(r0);

    phase("free_null");
    for (int i = 0; i < 3; i++)
        free_fn(NULL);

    phase("release");
    if (!filled(q, 100000, 3) || !filled(s, 40, 4))
        die("blocks were overwritten before release");
    free_fn(q);
    free_fn(s);

    phase("end");
    phases_print();
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        printf("expect %s %u %u %zu %zu\n", expected[i].name, expected[i].allocs,
               expected[i].frees, expected[i].alloc_bytes, expected[i].free_bytes);
    return 0;
}
