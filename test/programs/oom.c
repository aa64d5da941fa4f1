/*
 * A program that runs out of memory (run under `ulimit -v`): after a measured "work" phase it
 * fills its address space with 1 MiB and then 256-byte blocks until malloc returns NULL,
 * keeps asking (malloc, calloc, realloc, posix_memalign, aligned_alloc: every answer must be
 * NULL and the program must go on), then, still out of address space, frees some small
 * blocks and reallocates them from DISTINCT_STACKS different call stacks, on the main thread
 * and on a thread whose stack is static (nothing left to map one), so libchurn's own tables
 * must grow exactly when they cannot.  Then it frees everything and ends with a measured
 * "after" phase.  The program checks every block it kept.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>

#include "probe.h"

#define WORK_ALLOCS 64
#define WORK_SIZE 1000
#define SMALL 256
#define BIG (1u << 20)
#define MAX_BLOCKS (1u << 21)
#define SMALL_FIRST (DISTINCT_STACKS * 4)
#define RETRIES 1000
#define LEVELS 15 /* 2^15 call paths: more stacks than libchurn's first stack table holds */
#define DISTINCT_STACKS (1u << LEVELS)
#define AFTER_ALLOCS 10

static void *work[WORK_ALLOCS];
static void *blocks[MAX_BLOCKS];
static unsigned nblocks;
static void *by_path[2][DISTINCT_STACKS];

/* Two call sites per level: each path of LEVELS choices is a different stack (noipa: the
   two identical bodies must not be folded into one). */
static void *descend(unsigned path, unsigned level);
static __attribute__((noipa)) void *left(unsigned path, unsigned level)
{
    void *p = descend(path, level + 1);
    keep(p);
    return p;
}
static __attribute__((noipa)) void *right(unsigned path, unsigned level)
{
    void *p = descend(path, level + 1);
    keep(p);
    return p;
}
static __attribute__((noinline)) void *descend(unsigned path, unsigned level)
{
    if (level == LEVELS)
        return malloc(SMALL);
    return (path >> level) & 1 ? right(path, level) : left(path, level);
}

static unsigned paths_from(unsigned half)
{
    unsigned got = 0;
    for (unsigned i = 0; i < DISTINCT_STACKS / 2; i++) {
        unsigned path = half * (DISTINCT_STACKS / 2) + i;
        by_path[half][i] = descend(path, 0);
        if (by_path[half][i]) {
            fill(by_path[half][i], SMALL, path);
            got++;
        }
    }
    return got;
}

static void *second_half(void *arg)
{
    *(unsigned *)arg = paths_from(1);
    return NULL;
}

static unsigned char thread_stack[1u << 20] __attribute__((aligned(4096)));

int main(void)
{
    /* One arena: the thread allocates from the room the main thread hands back, not from an
       arena of its own that there is no address space left to create. */
    mallopt(M_ARENA_MAX, 1);
    phase("work");
    for (unsigned i = 0; i < WORK_ALLOCS; i++) {
        work[i] = malloc(WORK_SIZE);
        if (!work[i])
            die("malloc failed before memory ran out");
        fill(work[i], WORK_SIZE, i);
    }

    phase("exhaust");
    /* Small blocks first (their room is handed back for the distinct stacks below), then the
       rest of the address space in big ones, then whatever small ones still fit. */
    const size_t sizes[] = {SMALL, BIG, SMALL};
    const unsigned limits[] = {SMALL_FIRST, MAX_BLOCKS, MAX_BLOCKS};
    for (unsigned k = 0; k < 3; k++)
        while (nblocks < limits[k] && (blocks[nblocks] = malloc(sizes[k])))
            fill(blocks[nblocks], 16, nblocks), nblocks++;
    if (nblocks == MAX_BLOCKS)
        die("memory never ran out: is `ulimit -v` set?");
    unsigned nulls = 0;
    for (unsigned i = 0; i < RETRIES; i++) {
        void *p;
        nulls += malloc(SMALL) == NULL;
        nulls += malloc(BIG) == NULL;
        nulls += calloc(BIG, 16) == NULL;
        nulls += (p = realloc(blocks[0], 64u << 20)) == NULL;
        if (p)
            die("realloc grew a block to 64 MiB with no memory left");
        nulls += posix_memalign(&p, 4096, BIG) == ENOMEM;
        nulls += aligned_alloc(4096, BIG) == NULL;
    }
    if (nulls < RETRIES * 5)
        die("only %u of %u allocations failed with no memory left", nulls, RETRIES * 6);

    /* Room for the small blocks of the distinct stacks, none for anything mapped. */
    if (nblocks < SMALL_FIRST)
        die("only %u blocks fit under the limit", nblocks);
    for (unsigned i = SMALL_FIRST - DISTINCT_STACKS; i < SMALL_FIRST; i++) {
        if (!filled(blocks[i], 16, i))
            die("block %u was overwritten", i);
        free(blocks[i]);
        blocks[i] = NULL;
    }
    unsigned got = paths_from(0), got_thread = 0;
    pthread_attr_t attr;
    pthread_t t;
    if (pthread_attr_init(&attr) || pthread_attr_setstack(&attr, thread_stack, sizeof thread_stack))
        die("pthread_attr_setstack failed");
    int rc = pthread_create(&t, &attr, second_half, &got_thread);
    if (rc)
        die("pthread_create with a static stack failed: %s", strerror(rc));
    if (pthread_join(t, NULL))
        die("pthread_join failed");
    for (unsigned half = 0; half < 2; half++)
        for (unsigned i = 0; i < DISTINCT_STACKS / 2; i++)
            if (by_path[half][i]) {
                if (!filled(by_path[half][i], SMALL, half * (DISTINCT_STACKS / 2) + i))
                    die("block of path %u was overwritten", half * (DISTINCT_STACKS / 2) + i);
                free(by_path[half][i]);
            }
    for (unsigned i = 0; i < nblocks; i++) {
        if (!blocks[i])
            continue;
        if (!filled(blocks[i], 16, i))
            die("block %u was overwritten", i);
        free(blocks[i]);
    }

    phase("after");
    for (unsigned i = 0; i < AFTER_ALLOCS; i++) {
        void *p = malloc(100);
        if (!p)
            die("malloc failed after memory came back");
        fill(p, 100, i);
        if (!filled(p, 100, i))
            die("block %u broken after memory came back", i);
        free(p);
    }
    for (unsigned i = 0; i < WORK_ALLOCS; i++) {
        if (!filled(work[i], WORK_SIZE, i))
            die("work block %u was overwritten", i);
        free(work[i]);
    }
    phases_print();
    printf("blocks %u nulls %u paths %u %u\n", nblocks, nulls, got, got_thread);
    return 0;
}
