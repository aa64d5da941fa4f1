/*
 * Ways out by the exit_group system call itself, past every libc exit function:
 * `raw_exit MODE`, each after WORK_ALLOCS mallocs of WORK_SIZE bytes in the "work" epoch and
 * FREED of them freed in the "end" epoch.
 *   syscall  syscall(SYS_exit_group, 9) from main: glibc's syscall() wrapper.
 *   thread   a second thread calls syscall(SYS_exit_group, 10) while main allocates and frees
 *            in a loop.
 *   asm      waits 200 ms (the work reaches the trace at the writer's next flush), frees, then
 *            makes the syscall instruction inline with status 11, as a runtime with its own
 *            system call layer does: nothing libchurn interposes or patches runs, and the
 *            frees are in no flush.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

#define WORK_ALLOCS 13
#define WORK_SIZE 600
#define FREED 5

static void *kept[WORK_ALLOCS];
static atomic_int go;

static void *ender(void *arg)
{
    (void)arg;
    while (!atomic_load(&go))
        ;
    usleep(20000);
    syscall(SYS_exit_group, 10);
    return NULL;
}

__attribute__((noreturn)) static void inline_exit_group(int status)
{
    for (;;)
        __asm__ volatile("syscall" : : "a"(SYS_exit_group), "D"(status) : "rcx", "r11", "memory");
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: raw_exit syscall|thread|asm");
    phase("work");
    for (unsigned i = 0; i < WORK_ALLOCS; i++)
        kept[i] = malloc(WORK_SIZE);
    phase("end");
    phases_print();
    fflush(stdout);
    if (!strcmp(argv[1], "asm"))
        usleep(200000);
    for (unsigned i = 0; i < FREED; i++)
        free(kept[i]);
    if (!strcmp(argv[1], "syscall"))
        syscall(SYS_exit_group, 9);
    if (!strcmp(argv[1], "asm"))
        inline_exit_group(11);
    pthread_t t;
    if (pthread_create(&t, NULL, ender, NULL))
        die("pthread_create failed");
    atomic_store(&go, 1);
    for (unsigned i = 0;; i++)
        free(malloc(16 + i % 5000));
}
