/*
 * What a free + malloc pair costs in the two parts of the shim that every heap event goes
 * through besides the ring (shim/record/order.c and shim/record/livemap.c, linked in directly), under the
 * pattern of bench/threads.c (each thread frees the oldest of 256 live blocks and allocates a
 * new one, 16..1024 bytes): the program thread's two order numbers, on 1 and 2 threads, and
 * the writer's live map remove + insert, on one thread as the writer runs it, with a standing
 * population of long-lived blocks so the map is not tiny.  The addresses are real ones from
 * this process's malloc, so their layout (and the map's cache behaviour) is the allocator's.
 *
 * bench/run.sh (`make bench`) builds and runs it: build/bench/livemap_bench [OPS_PER_THREAD]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "shim.h"

/* The three things livemap.c and order.c take from the rest of the shim. */
_Atomic uint64_t churn_epoch_now;

void *churn_os_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void churn_os_unmap(void *p, size_t bytes)
{
    munmap(p, bytes);
}

#define SLOTS 256
#define STANDING 50000

static long ops = 2000000;
/* 0: malloc and free alone, the baseline the others are read against; 1: with the order
   numbers; 2: with the live map */
static int mode;

static _Atomic uint32_t sink; /* the numbers are used */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *churn(void *arg)
{
    uint32_t x = 2463534242u + (uint32_t)(uintptr_t)arg;
    void *slot[SLOTS] = {0};
    churn_live v;
    for (long i = 0; i < ops; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        unsigned k = (unsigned)(i % SLOTS);
        uint32_t e = 0;
        if (slot[k]) {
            if (mode == 2 && !churn_livemap_remove(churn_livemap_shard((uintptr_t)slot[k]),
                                                   (uintptr_t)slot[k], &v)) {
                fprintf(stderr, "livemap_bench: a live block was not found\n");
                exit(1);
            }
            if (mode == 1)
                sink += churn_order_take((uintptr_t)slot[k], &e);
            free(slot[k]);
        }
        size_t size = 16 + (x & 1008);
        slot[k] = malloc(size);
        if (!slot[k]) {
            fprintf(stderr, "livemap_bench: out of memory\n");
            exit(1);
        }
        if (mode == 1)
            sink += churn_order_take((uintptr_t)slot[k], &e);
        if (mode == 2)
            churn_livemap_insert(churn_livemap_shard((uintptr_t)slot[k]), (uintptr_t)slot[k],
                                 size, 8, x & 0xffff, 0);
    }
    for (unsigned k = 0; k < SLOTS; k++) {
        if (mode == 2)
            churn_livemap_remove(churn_livemap_shard((uintptr_t)slot[k]), (uintptr_t)slot[k],
                                 &v);
        free(slot[k]);
    }
    return NULL;
}

/* Best wall time of five runs with n threads. */
static double run(int n)
{
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        pthread_t t[2];
        double t0 = now_s();
        for (int i = 0; i < n; i++)
            if (pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)i)) {
                fprintf(stderr, "livemap_bench: pthread_create failed\n");
                exit(1);
            }
        for (int i = 0; i < n; i++)
            pthread_join(t[i], NULL);
        double s = now_s() - t0;
        best = s < best ? s : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && (ops = atol(argv[1])) < 1)) {
        fprintf(stderr, "usage: livemap_bench [OPS_PER_THREAD]\n");
        return 2;
    }
    for (int i = 0; i < STANDING; i++) {
        size_t size = 16 + (size_t)(i * 37 % 500);
        void *p = malloc(size);
        if (!p)
            return 1;
        churn_livemap_insert(churn_livemap_shard((uintptr_t)p), (uintptr_t)p, size, 8, 1, 0);
    }
    for (int n = 1; n <= 2; n++) {
        mode = 0;
        double bare = run(n);
        mode = 1;
        double ordered = run(n);
        printf("%d thread(s): %.1f ns per free+malloc pair, %.1f with their two order numbers "
               "(%.2f / %.2f M pairs/s in all)\n",
               n, bare * 1e9 / ops, ordered * 1e9 / ops, n * ops / bare / 1e6,
               n * ops / ordered / 1e6);
        if (n == 1) {
            mode = 2;
            double mapped = run(1);
            printf("the writer's live map: %.1f ns per free+malloc pair with its remove+insert "
                   "(one thread, as the writer)\n",
                   mapped * 1e9 / ops);
        }
    }
    return 0;
}
