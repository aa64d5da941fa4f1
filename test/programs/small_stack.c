/*
 * A thread started with the smallest stack POSIX allows (PTHREAD_STACK_MIN): glibc carves
 * every loaded library's static TLS out of that stack and refuses with EINVAL when it does
 * not fit, so a preloaded tracer with a large TLS breaks programs that do this (node does).
 * The thread allocates KEPT blocks in small_stack_alloc and keeps them, so the trace must
 * show them there, walked on that small stack.
 */
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include "probe.h"

#define KEPT 17
#define SIZE 200

static void *kept[KEPT];

static __attribute__((noinline)) void *small_stack_alloc(unsigned i)
{
    void *p = malloc(SIZE);
    if (!p)
        die("malloc failed");
    fill(p, SIZE, i);
    return p;
}

static void *body(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < KEPT; i++)
        kept[i] = small_stack_alloc(i);
    return NULL;
}

int main(void)
{
    pthread_attr_t attr;
    pthread_t thread;
    if (pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN))
        die("pthread_attr_setstacksize(PTHREAD_STACK_MIN) failed");
    int err = pthread_create(&thread, &attr, body, NULL);
    if (err)
        die("pthread_create with a %d-byte stack failed: %s", PTHREAD_STACK_MIN, strerror(err));
    if (pthread_join(thread, NULL))
        die("pthread_join failed");
    for (unsigned i = 0; i < KEPT; i++)
        keep(kept[i]);
    printf("kept %d\n", KEPT);
    return 0;
}
