/*
 * Threads that exit while their last events may still sit in their buffers: in the "work"
 * epoch, one thread makes A_ALLOCS mallocs and frees A_FREES of them then returns, another
 * makes B_ALLOCS callocs, frees B_FREES and leaves through pthread_exit() from a nested call.
 * They exit in the next epoch without allocating again, so whatever they had buffered must
 * reach the trace at thread exit for the "work" epoch to come out exact.  The threads are
 * created before the "work" epoch because pthread_create allocates.
 */
#include <pthread.h>

#include "probe.h"

#define A_ALLOCS 37
#define A_FREES 30
#define A_SIZE 1000
#define B_ALLOCS 23
#define B_FREES 20
#define B_SIZE 240

static pthread_barrier_t go, work_done, may_exit;
static void *a_kept[A_ALLOCS], *b_kept[B_ALLOCS];

static __attribute__((noinline)) void *returning_alloc(unsigned i)
{
    void *p = malloc(A_SIZE);
    if (!p)
        die("malloc failed");
    fill(p, A_SIZE, i);
    return p;
}

static __attribute__((noinline)) void *exiting_alloc(unsigned i)
{
    unsigned char *p = calloc(B_SIZE / 24, 24);
    if (!p)
        die("calloc failed");
    for (unsigned k = 0; k < B_SIZE; k++)
        if (p[k])
            die("calloc returned dirty memory");
    fill(p, B_SIZE, i);
    return p;
}

static void *returning_thread(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&go);
    for (unsigned i = 0; i < A_ALLOCS; i++)
        a_kept[i] = returning_alloc(i);
    for (unsigned i = 0; i < A_FREES; i++) {
        free(a_kept[i]);
        a_kept[i] = NULL;
    }
    pthread_barrier_wait(&work_done);
    pthread_barrier_wait(&may_exit);
    return NULL;
}

static __attribute__((noinline, noreturn)) void leave_from_deep_inside(void)
{
    pthread_barrier_wait(&may_exit);
    pthread_exit(NULL);
}

static void *exiting_thread(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&go);
    for (unsigned i = 0; i < B_ALLOCS; i++)
        b_kept[i] = exiting_alloc(i);
    for (unsigned i = 0; i < B_FREES; i++) {
        free(b_kept[i]);
        b_kept[i] = NULL;
    }
    pthread_barrier_wait(&work_done);
    leave_from_deep_inside();
}

/* pthread_exit loads libgcc_s on first use, with allocations of its own: get that done early. */
static void *warm_up(void *arg)
{
    (void)arg;
    pthread_exit(NULL);
}

int main(void)
{
    pthread_t a, b, w;
    if (pthread_create(&w, NULL, warm_up, NULL) || pthread_join(w, NULL))
        die("warm-up thread failed");
    if (pthread_barrier_init(&go, NULL, 3) || pthread_barrier_init(&work_done, NULL, 3) ||
        pthread_barrier_init(&may_exit, NULL, 3))
        die("pthread_barrier_init failed");
    if (pthread_create(&a, NULL, returning_thread, NULL) ||
        pthread_create(&b, NULL, exiting_thread, NULL))
        die("pthread_create failed");
    phase("work");
    pthread_barrier_wait(&go);
    pthread_barrier_wait(&work_done);
    phase("exit");
    pthread_barrier_wait(&may_exit);
    if (pthread_join(a, NULL) || pthread_join(b, NULL))
        die("pthread_join failed");
    phase("end");
    for (unsigned i = A_FREES; i < A_ALLOCS; i++)
        if (!filled(a_kept[i], A_SIZE, i))
            die("block %u of the returning thread was overwritten", i);
    for (unsigned i = B_FREES; i < B_ALLOCS; i++)
        if (!filled(b_kept[i], B_SIZE, i))
            die("block %u of the exiting thread was overwritten", i);
    phases_print();
    printf("expect %d %d %d %d\n", A_ALLOCS + B_ALLOCS, A_FREES + B_FREES,
           A_ALLOCS * A_SIZE + B_ALLOCS * B_SIZE, A_FREES * A_SIZE + B_FREES * B_SIZE);
    return 0;
}
