/*
 * The fragmentation workload (docs/fragmentation.md): N objects of 16..1024 bytes, a random
 * 95 % of them freed and the rest kept, then the allocator's deepest release.  It prints the
 * allocator's own truth about the memory the survivors hold, measured without the trace:
 *   glibc       resident bytes of the [heap] mapping after malloc_trim(0) (mincore)
 *   gperftools  bytes in spans in use: heap_size - pageheap_free - pageheap_unmapped
 *   jemalloc    stats.active after flushing the thread cache and purging every arena
 * and the epoch that ended right after the release, whose fragmentation row the test reads.
 *
 * usage: fragment ALLOCATOR [OBJECTS]   (ALLOCATOR: glibc, gperftools or jemalloc)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "churn.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void die(const char *what)
{
    fprintf(stderr, "fragment: %s\n", what);
    exit(1);
}

static void *symbol(const char *name)
{
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f) {
        fprintf(stderr, "fragment: %s not found: is the allocator preloaded?\n", name);
        exit(1);
    }
    return f;
}

/* The [heap] mapping's resident bytes. */
static uint64_t heap_resident(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps)
        die("cannot read /proc/self/maps");
    char line[512];
    unsigned long lo = 0, hi = 0;
    while (fgets(line, sizeof line, maps))
        if (strstr(line, "[heap]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
            break;
    fclose(maps);
    if (hi <= lo)
        die("no [heap] mapping");
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = (hi - lo) / (unsigned long)page;
    unsigned char *vec = mmap(NULL, pages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                              -1, 0);
    if (vec == MAP_FAILED || mincore((void *)lo, hi - lo, vec) != 0)
        die("mincore of [heap] failed");
    uint64_t resident = 0;
    for (size_t i = 0; i < pages; i++)
        resident += (vec[i] & 1) ? (uint64_t)page : 0;
    munmap(vec, pages);
    return resident;
}

static uint64_t release_glibc(void)
{
    malloc_trim(0);
    return heap_resident();
}

static uint64_t release_gperftools(void)
{
    void (*idle)(void) = (void (*)(void))symbol("MallocExtension_MarkThreadIdle");
    void (*release)(void) = (void (*)(void))symbol("MallocExtension_ReleaseFreeMemory");
    int (*property)(const char *, size_t *) =
        (int (*)(const char *, size_t *))symbol("MallocExtension_GetNumericProperty");
    idle();
    release();
    size_t heap = 0, free_bytes = 0, unmapped = 0;
    if (!property("generic.heap_size", &heap) ||
        !property("tcmalloc.pageheap_free_bytes", &free_bytes) ||
        !property("tcmalloc.pageheap_unmapped_bytes", &unmapped))
        die("gperftools properties unavailable");
    return heap - free_bytes - unmapped;
}

static uint64_t release_jemalloc(void)
{
    int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
        (int (*)(const char *, void *, size_t *, void *, size_t))symbol("mallctl");
    if (mallctl("thread.tcache.flush", NULL, NULL, NULL, 0) != 0 ||
        mallctl("arena.4096.purge", NULL, NULL, NULL, 0) != 0)
        die("jemalloc flush or purge failed");
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, len);
    size_t active = 0;
    len = sizeof active;
    if (mallctl("stats.active", &active, &len, NULL, 0) != 0)
        die("jemalloc stats.active unavailable");
    return active;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: fragment glibc|gperftools|jemalloc [OBJECTS]");
    uint64_t (*release)(void) = !strcmp(argv[1], "glibc")        ? release_glibc
                                : !strcmp(argv[1], "gperftools") ? release_gperftools
                                : !strcmp(argv[1], "jemalloc")   ? release_jemalloc
                                                                 : NULL;
    if (!release)
        die("unknown allocator");
    size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 2000000;
    /* the pointer array is not a heap object: it would be counted as one */
    void **objs = mmap(NULL, n * sizeof *objs, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (objs == MAP_FAILED)
        die("mmap failed");
    churn_epoch_begin();
    for (size_t i = 0; i < n; i++) {
        size_t size = 16 + next_random() % 1009;
        if (!(objs[i] = malloc(size)))
            die("malloc failed");
        memset(objs[i], 1, size);
    }
    churn_epoch_begin();
    size_t kept = 0, kept_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        if (next_random() % 100 < 95) {
            free(objs[i]);
        } else {
            kept++;
            kept_bytes += malloc_usable_size(objs[i]);
        }
    }
    uint64_t truth = release();
    uint64_t next = churn_epoch_begin();
    /* The writer reads the allocator's counters once this epoch waits to close, on its own
       thread; an exit right after the tick would leave the epoch with the reading before it
       (marked COUNTERS_STALE: the exit path never asks the allocator). */
    nanosleep(&(struct timespec){0, 50000000}, NULL);
    printf("allocator=%s objects=%zu kept=%zu kept_usable=%zu truth_bytes=%llu epoch=%llu\n",
           argv[1], n, kept, kept_bytes, (unsigned long long)truth,
           (unsigned long long)(next ? next - 1 : 0));
    return 0;
}
