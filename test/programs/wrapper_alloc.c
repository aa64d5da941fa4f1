/* A program with its own allocation wrappers, as redis's zmalloc or git's xmalloc:
   xmalloc (malloc, abort on failure) and xstrdup (through xmalloc).  grow_table keeps one
   48-byte object an epoch through xmalloc and name_copy one copy of a 15-byte string an epoch
   through xstrdup, over 50 epochs: the function rows are grow_table and name_copy, each
   "via" the wrapper it called, not xmalloc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"

#define EPOCHS 50

static void *table[EPOCHS];
static char *names[EPOCHS];

__attribute__((noinline)) static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    return p;
}

__attribute__((noinline)) static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

__attribute__((noinline)) static void grow_table(int e)
{
    table[e] = xmalloc(48);
    memset(table[e], 0, 48);
}

__attribute__((noinline)) static void name_copy(int e)
{
    names[e] = xstrdup("fourteen chars");
}

int main(void)
{
    for (int e = 0; e < EPOCHS; e++) {
        churn_epoch_begin();
        grow_table(e);
        name_copy(e);
    }
    unsigned sum = 0;
    for (int e = 0; e < EPOCHS; e++)
        sum += (unsigned char)names[e][0] + *(unsigned char *)table[e];
    printf("checksum %u\n", sum);
    return 0;
}
