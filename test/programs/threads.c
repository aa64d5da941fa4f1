/*
 * Eight threads churn at once inside one epoch: each makes ROUNDS rounds of BATCH mallocs of
 * its own sizes and frees them, then hands HANDOFF blocks to its neighbour, which frees them
 * (a free on another thread than the allocation).  The threads are created before the epoch
 * and joined after it, so the epoch holds exactly THREADS * (ROUNDS * BATCH + HANDOFF)
 * allocations and as many frees, with no net change of the live set.
 */
#include <pthread.h>

#include "probe.h"

#define THREADS 8
#define ROUNDS 500
#define BATCH 20
#define HANDOFF 64

static pthread_barrier_t start, handed;
static void *handoff[THREADS][HANDOFF];

static size_t size_of(unsigned thread, unsigned i)
{
    return 16 + 8 * thread + (i % 7) * 24;
}

static __attribute__((noinline)) void *churn_alloc(unsigned thread, unsigned i)
{
    void *p = malloc(size_of(thread, i));
    if (!p)
        die("thread %u: malloc failed", thread);
    fill(p, size_of(thread, i), thread + i);
    return p;
}

static void *worker(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    void *batch[BATCH];
    pthread_barrier_wait(&start);
    for (unsigned r = 0; r < ROUNDS; r++) {
        for (unsigned i = 0; i < BATCH; i++)
            batch[i] = churn_alloc(t, r + i);
        for (unsigned i = 0; i < BATCH; i++) {
            if (!filled(batch[i], size_of(t, r + i), t + r + i))
                die("thread %u: block %u of round %u was overwritten", t, i, r);
            free(batch[i]);
        }
    }
    for (unsigned i = 0; i < HANDOFF; i++)
        handoff[t][i] = churn_alloc(t, i);
    pthread_barrier_wait(&handed);
    unsigned from = (t + 1) % THREADS;
    for (unsigned i = 0; i < HANDOFF; i++) {
        if (!filled(handoff[from][i], size_of(from, i), from + i))
            die("thread %u: handed-off block %u of thread %u was overwritten", t, i, from);
        free(handoff[from][i]);
    }
    /* No thread may leave before all have finished, so thread exit stays out of the epoch. */
    pthread_barrier_wait(&start);
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    uint64_t bytes = 0;
    for (unsigned t = 0; t < THREADS; t++) {
        for (unsigned r = 0; r < ROUNDS; r++)
            for (unsigned i = 0; i < BATCH; i++)
                bytes += size_of(t, r + i);
        for (unsigned i = 0; i < HANDOFF; i++)
            bytes += size_of(t, i);
    }
    if (pthread_barrier_init(&start, NULL, THREADS + 1) ||
        pthread_barrier_init(&handed, NULL, THREADS))
        die("pthread_barrier_init failed");
    for (unsigned t = 0; t < THREADS; t++)
        if (pthread_create(&threads[t], NULL, worker, (void *)(uintptr_t)t))
            die("pthread_create failed");
    phase("churn");
    pthread_barrier_wait(&start);
    pthread_barrier_wait(&start);
    phase("joined");
    for (unsigned t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    phase("end");
    phases_print();
    printf("expect %u %llu\n", THREADS * (ROUNDS * BATCH + HANDOFF), (unsigned long long)bytes);
    return 0;
}
