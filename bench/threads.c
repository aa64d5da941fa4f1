/*
 * Parallel allocation churn: N threads each run OPS steps of "free the oldest of 256 live
 * blocks, allocate a new one", with sizes from a fixed per-thread sequence (16..1024 bytes).
 * The benchmark runs it with 1 and 2 threads at the same OPS per thread, so that 2-thread
 * against 1-thread throughput shows whether a tracer serialises the threads.
 * Usage: threads NTHREADS OPS_PER_THREAD
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 256
#define MAX_THREADS 64

struct worker {
    pthread_t thread;
    unsigned seed;
    long ops;
    uint64_t checksum;
};

static void *churn(void *arg)
{
    struct worker *w = arg;
    unsigned char *slot[SLOTS] = { 0 };
    uint32_t x = w->seed;
    for (long i = 0; i < w->ops; i++) {
        /* xorshift: a fixed sequence per seed, so every run makes the same calls */
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        size_t size = 16 + (x & 1008);
        unsigned k = (unsigned)(i % SLOTS);
        free(slot[k]);
        slot[k] = malloc(size);
        if (!slot[k]) {
            fprintf(stderr, "threads: out of memory\n");
            exit(1);
        }
        /* touch the block so the allocation cannot be elided and pages are real */
        slot[k][0] = (unsigned char)i;
        slot[k][size - 1] = (unsigned char)x;
        w->checksum += slot[k][0];
    }
    for (unsigned k = 0; k < SLOTS; k++)
        free(slot[k]);
    return NULL;
}

static long parse_positive(const char *s, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < 1 || v > max)
        return -1;
    return v;
}

int main(int argc, char **argv)
{
    long nthreads = argc == 3 ? parse_positive(argv[1], MAX_THREADS) : -1;
    long ops = argc == 3 ? parse_positive(argv[2], 1L << 40) : -1;
    if (nthreads < 0 || ops < 0) {
        fprintf(stderr, "usage: threads NTHREADS(1..%d) OPS_PER_THREAD\n", MAX_THREADS);
        return 2;
    }
    struct worker w[MAX_THREADS];
    for (long t = 0; t < nthreads; t++) {
        w[t] = (struct worker){ .seed = 2463534242u + (unsigned)t, .ops = ops };
        int err = pthread_create(&w[t].thread, NULL, churn, &w[t]);
        if (err) {
            fprintf(stderr, "threads: pthread_create: %s\n", strerror(err));
            return 1;
        }
    }
    uint64_t sum = 0;
    for (long t = 0; t < nthreads; t++) {
        pthread_join(w[t].thread, NULL);
        sum += w[t].checksum;
    }
    printf("threads=%ld ops=%ld checksum=%llu\n", nthreads, ops, (unsigned long long)sum);
    return 0;
}
