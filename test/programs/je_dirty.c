/* Leaves jemalloc with free but resident (dirty) pages, ends an epoch while the heap is
   quiet, waits for libchurn's writer to read the books, and prints jemalloc's own figures of
   that same heap: pdirty of every arena merged, and the counters libchurn reads. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "churn.h"

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);

static size_t stat(mallctl_fn mallctl, const char *name)
{
    size_t v = 0, len = sizeof v;
    if (mallctl(name, &v, &len, NULL, 0) != 0) {
        fprintf(stderr, "je_dirty: mallctl %s failed\n", name);
        exit(1);
    }
    return v;
}

int main(void)
{
    mallctl_fn mallctl = (mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
    if (!mallctl) {
        fprintf(stderr, "je_dirty: no mallctl (run with jemalloc preloaded)\n");
        return 1;
    }
    /* large blocks (past the thread cache's 32 KiB) go back to the arena's dirty extents when
       freed; small ones fill slabs and the thread cache */
    enum { LARGE = 200, SMALL = 20000 };
    static void *large[LARGE], *small[SMALL];
    for (int i = 0; i < LARGE; i++)
        memset(large[i] = malloc(96 << 10), 1, 96 << 10);
    for (int i = 0; i < SMALL; i++)
        memset(small[i] = malloc(64 + i % 512), 2, 64);
    for (int i = 0; i < LARGE; i++)
        if (i % 4)
            free(large[i]);
    for (int i = 0; i < SMALL; i++)
        if (i % 8)
            free(small[i]);
    churn_epoch_begin();
    struct timespec ts = {1, 0}; /* the writer reads them on its next pass */
    nanosleep(&ts, NULL);
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, len);
    printf("page %zu pdirty %zu resident %zu active %zu metadata %zu\n",
           stat(mallctl, "arenas.page"), stat(mallctl, "stats.arenas.4096.pdirty"),
           stat(mallctl, "stats.resident"), stat(mallctl, "stats.active"),
           stat(mallctl, "stats.metadata"));
    return 0;
}
