#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void out_of_memory(size_t n)
{
    fprintf(stderr, "churn-analyze: out of memory (allocating %zu bytes)\n", n);
    exit(1);
}

void *churn_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory(n);
    return p;
}

void *churn_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        out_of_memory(count * size);
    return p;
}

void *churn_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        out_of_memory(n);
    return q;
}

char *churn_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(churn_xmalloc(n), s, n);
}

void churn_reserve(void *items, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem)
            out_of_memory(SIZE_MAX);
        c *= 2;
    }
    void **p = items;
    *p = churn_xrealloc(*p, c * elem);
    *cap = c;
}
