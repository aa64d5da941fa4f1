/*
 * One thread allocates, another frees: in the "handoff" epoch the main thread allocates
 * ROUNDS x BATCH blocks in handoff_alloc, a batch at a time, and a second thread frees each
 * batch.  The shim drains each thread's ring separately, so a batch's frees can reach the
 * trace before its allocations; the analysis must pair every one of them anyway.
 */
#include <pthread.h>

#include "probe.h"

#define ROUNDS 20
#define BATCH 4000
#define SIZE 48

static void *batch[BATCH];
static pthread_barrier_t batch_full, batch_empty;

static __attribute__((noinline)) void *handoff_alloc(unsigned i)
{
    void *p = malloc(SIZE);
    if (!p)
        die("malloc failed");
    fill(p, SIZE, i);
    return p;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (unsigned r = 0; r < ROUNDS; r++) {
        pthread_barrier_wait(&batch_full);
        for (unsigned i = 0; i < BATCH; i++)
            free(batch[i]);
        pthread_barrier_wait(&batch_empty);
    }
    return NULL;
}

int main(void)
{
    pthread_t thread;
    if (pthread_barrier_init(&batch_full, NULL, 2) || pthread_barrier_init(&batch_empty, NULL, 2) ||
        pthread_create(&thread, NULL, consumer, NULL))
        die("thread setup failed");
    phase("handoff");
    for (unsigned r = 0; r < ROUNDS; r++) {
        for (unsigned i = 0; i < BATCH; i++)
            batch[i] = handoff_alloc(r * BATCH + i);
        pthread_barrier_wait(&batch_full);
        pthread_barrier_wait(&batch_empty);
    }
    phase("after");
    if (pthread_join(thread, NULL))
        die("pthread_join failed");
    phases_print();
    printf("blocks %d size %d\n", ROUNDS * BATCH, SIZE);
    return 0;
}
