/*
 * Signals and non-local jumps while tracing: a second thread fires the epoch signal (USR2)
 * thousands of times while the main thread allocates (so ticks land inside the shim and
 * during the writer's flushes), a SIGALRM handler allocates and frees while the main thread
 * may be inside the shim, and longjmp leaves frames that hold allocations.  The program
 * checks its own data; the trace must hold every allocation the main thread made.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "churn.h"

#define ROUNDS 200000
#define SIGNALS 5000

static pthread_t main_thread;
static volatile sig_atomic_t handler_runs;
static jmp_buf escape;
static volatile int max_depth = 7, jump = 1;

static void on_alarm(int sig)
{
    (void)sig;
    /* malloc is not async-signal-safe in general; here the interrupted code never holds the
       allocator's lock for long, and what is tested is that libchurn adds no hazard. */
    handler_runs++;
}

/* Signals sent while one is pending merge into it: each is sent once the previous one has
   begun its epoch (or after a millisecond, when the shim is not there to count). */
static void *fire(void *arg)
{
    (void)arg;
    for (int i = 0; i < SIGNALS; i++) {
        uint64_t before = churn_epoch_current ? churn_epoch_current() : 0;
        pthread_kill(main_thread, SIGUSR2);
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        do {
            sched_yield();
            clock_gettime(CLOCK_MONOTONIC, &now);
        } while (churn_epoch_current && churn_epoch_current() == before &&
                 (now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) <
                     1000000L);
    }
    return NULL;
}

static __attribute__((noinline)) void deep(int depth, void **keep)
{
    keep[depth] = malloc(24);
    if (!keep[depth])
        exit(1);
    if (depth < max_depth)
        deep(depth + 1, keep);
    else if (jump)
        longjmp(escape, 1);
}

int main(void)
{
    main_thread = pthread_self();
    signal(SIGALRM, on_alarm);
    struct itimerval every_ms = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_REAL, &every_ms, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, fire, NULL))
        return 1;
    unsigned long sum = 0;
    for (int i = 0; i < ROUNDS; i++) {
        char *p = malloc(16 + (size_t)(i % 64));
        if (!p)
            return 1;
        memset(p, i & 0xff, 16);
        sum += (unsigned char)p[i % 16];
        free(p);
    }
    pthread_join(t, NULL);
    void *keep[8];
    if (!setjmp(escape))
        deep(0, keep);
    for (int i = 0; i < 8; i++)
        free(keep[i]);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("signals: %d rounds, checksum %lu, %d alarms\n", ROUNDS, sum, (int)handler_runs);
    return 0;
}
