/*
 * `cancel_epoch`: pthread_cancel of a thread that begins epochs (churn_epoch) in a loop.  The
 * thread keeps a block of THREAD_SIZE bytes in thread-specific data, freed by the key's
 * destructor when the thread ends.  The cancel is made pending before the thread's first
 * churn_epoch, which comes more than a millisecond after the thread's last one, when a
 * tracer reads the process's RSS afresh: a cancellation point inside churn_epoch acts there.
 * Without one, the thread is cancelled at its own pthread_testcancel a thousand epochs later.
 *
 * Then the main thread goes on: AFTER epochs, each with one block of AFTER_SIZE bytes kept by
 * after_cancel.  A trace must hold all of them, and the thread's block freed.  Prints
 * "cancelled" and "kept N".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "probe.h"

#define AFTER 50
#define AFTER_SIZE 4321
#define THREAD_SIZE 1234

static pthread_key_t key;
static atomic_int started, cancel_sent;
static void *kept[AFTER];

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void *thread_block(void)
{
    void *p = malloc(THREAD_SIZE);
    keep(p); /* not a tail call: the function stays on the stack */
    return p;
}

static void *epochs(void *arg)
{
    (void)arg;
    void *mine = thread_block();
    if (!mine || pthread_setspecific(key, mine))
        die("the thread's block could not be kept");
    atomic_store(&started, 1);
    while (!atomic_load(&cancel_sent))
        ;
    /* neither of these is a cancellation point */
    uint64_t until = now_ns() + 5000000u;
    while (now_ns() < until)
        ;
    for (;;) {
        for (int i = 0; i < 1000; i++)
            churn_epoch_begin();
        pthread_testcancel();
    }
    return NULL;
}

__attribute__((noinline)) static void *after_cancel(void)
{
    void *p = malloc(AFTER_SIZE);
    keep(p);
    return p;
}

int main(void)
{
    if (pthread_key_create(&key, free))
        die("pthread_key_create failed");
    pthread_t th;
    if (pthread_create(&th, NULL, epochs, NULL))
        die("pthread_create failed");
    while (!atomic_load(&started))
        ;
    if (pthread_cancel(th))
        die("pthread_cancel failed");
    atomic_store(&cancel_sent, 1);
    void *ret;
    if (pthread_join(th, &ret) || ret != PTHREAD_CANCELED)
        die("the thread was not cancelled");
    for (int i = 0; i < AFTER; i++) {
        churn_epoch_begin();
        if (!(kept[i] = after_cancel()))
            die("malloc failed");
    }
    for (int i = 0; i < AFTER; i++)
        keep(kept[i]);
    printf("cancelled\nkept %d\n", AFTER);
    return 0;
}
