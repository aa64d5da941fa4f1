/*
 * 10,000 short-lived threads, one after another, each making 10 allocations and freeing them:
 * every thread's ring must be registered, drained and recycled, and every event counted.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "churn.h"

#define THREADS 10000
#define PER_THREAD 10

static __attribute__((noinline)) void *thread_work(void *arg)
{
    (void)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        void *volatile p = malloc(32 + (size_t)i);
        if (!p)
            return (void *)1;
        free(p);
    }
    return NULL;
}

int main(void)
{
    churn_epoch_begin();
    for (int i = 0; i < THREADS; i++) {
        pthread_t t;
        void *failed;
        if (pthread_create(&t, NULL, thread_work, NULL) || pthread_join(t, &failed) || failed) {
            fprintf(stderr, "many_threads: thread %d failed\n", i);
            return 1;
        }
    }
    churn_epoch_begin();
    printf("many_threads: %d threads x %d allocations\n", THREADS, PER_THREAD);
    return 0;
}
