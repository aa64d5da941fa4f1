/*
 * Ways out that pass by exit()'s ordinary path: `exit_ways MODE`, each after WORK_ALLOCS
 * mallocs of WORK_SIZE bytes in the "work" epoch.
 *   quick      at_quick_exit handler frees the blocks, then quick_exit(6): glibc ends it in
 *              its internal _exit, past the exported one.  Status 6.
 *   thread     a second thread calls exit(8) while main allocates and frees in a loop.
 *   thread_    the same with _exit(11).
 *   exec_fail  execve of a path that does not exist fails; the blocks are freed and exit(12).
 * The trace must be complete whichever way: the work, the frees, and how it ended.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "probe.h"

#define WORK_ALLOCS 13
#define WORK_SIZE 600

static void *kept[WORK_ALLOCS];
static atomic_int go;

static void free_kept(void)
{
    for (unsigned i = 0; i < WORK_ALLOCS; i++)
        free(kept[i]);
}

static void *ender(void *arg)
{
    while (!atomic_load(&go))
        ;
    usleep(20000);
    if (arg)
        _exit(11);
    exit(8);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: exit_ways quick|thread|thread_|exec_fail");
    phase("work");
    for (unsigned i = 0; i < WORK_ALLOCS; i++)
        kept[i] = malloc(WORK_SIZE);
    phase("end");
    phases_print();
    fflush(stdout);
    if (!strcmp(argv[1], "quick")) {
        at_quick_exit(free_kept);
        quick_exit(6);
    }
    if (!strcmp(argv[1], "exec_fail")) {
        char *args[] = {"/nonexistent/program", NULL};
        execv(args[0], args);
        free_kept();
        exit(12);
    }
    pthread_t t;
    if (pthread_create(&t, NULL, ender, strcmp(argv[1], "thread") ? (void *)1 : NULL))
        die("pthread_create failed");
    atomic_store(&go, 1);
    for (unsigned i = 0;; i++)
        free(malloc(16 + i % 5000));
}
