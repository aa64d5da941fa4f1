/*
 * A process whose threads end without exit(): `thread_end MODE`.
 *   pthread_exit  main allocates WORK_ALLOCS blocks, starts a thread and leaves with
 *                 pthread_exit(); the thread allocates as many again and returns.  glibc then
 *                 calls exit(0) on the last thread: the atexit handler prints "atexit ran"
 *                 and frees every block.  Natively: status 0.
 *   sys_exit      main allocates WORK_ALLOCS blocks and leaves by the raw exit system call
 *                 with status 5, as a seccomp-strict program must (no exit_group, no atexit
 *                 handler).  Natively: status 5.
 * Under the shim the process must end the same way (the writer thread never keeps it alive)
 * and the trace must hold every allocation.
 */
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

#define WORK_ALLOCS 21
#define WORK_SIZE 300

static void *blocks[2 * WORK_ALLOCS];

static void at_end(void)
{
    for (unsigned i = 0; i < 2 * WORK_ALLOCS; i++)
        free(blocks[i]);
    printf("atexit ran\n");
}

static void *second_half(void *arg)
{
    (void)arg;
    for (unsigned i = WORK_ALLOCS; i < 2 * WORK_ALLOCS; i++)
        blocks[i] = malloc(WORK_SIZE);
    usleep(100000); /* main is gone by now */
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "pthread_exit") && strcmp(argv[1], "sys_exit")))
        die("usage: thread_end pthread_exit|sys_exit");
    for (unsigned i = 0; i < WORK_ALLOCS; i++)
        blocks[i] = malloc(WORK_SIZE);
    if (!strcmp(argv[1], "sys_exit"))
        syscall(SYS_exit, 5);
    atexit(at_end);
    printf("main leaves\n"); /* buffered: only exit() writes it out to a file */
    pthread_t t;
    if (pthread_create(&t, NULL, second_half, NULL))
        die("pthread_create failed");
    pthread_exit(NULL);
}
