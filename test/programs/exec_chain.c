/*
 * A process that execs: the first image allocates BEFORE blocks in before_exec_alloc, tries
 * an exec that fails, allocates AFTER_FAILED blocks in after_failed_exec_alloc, then execs
 * itself; the second image allocates SECOND blocks in second_image_alloc, forks a child that
 * execs itself once more (`third`: nothing to do but exit) and exits.  Every block is kept.
 * The first image's trace must hold its two batches and end in an exec; each later image
 * writes a trace of its own under a derived name, the child's counting its own first exec.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

#define BEFORE 11
#define AFTER_FAILED 7
#define SECOND 5
#define SIZE 96

/* Bodies that differ, or the compiler folds them into one function. */
static __attribute__((noinline)) void before_exec_alloc(unsigned i) { keep(malloc(SIZE + i)); }
static __attribute__((noinline)) void after_failed_exec_alloc(unsigned i)
{
    keep(calloc(1, SIZE + i));
}
static __attribute__((noinline)) void second_image_alloc(unsigned i)
{
    keep(malloc(2 * SIZE + i));
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "third"))
        return 0;
    if (argc == 2 && !strcmp(argv[1], "second")) {
        for (unsigned i = 0; i < SECOND; i++)
            second_image_alloc(i);
        printf("pid %d\n", (int)getpid());
        fflush(stdout);
        pid_t child = fork();
        if (child == 0) {
            execl("/proc/self/exe", argv[0], "third", (char *)NULL);
            _exit(127);
        }
        int status;
        if (child < 0 || waitpid(child, &status, 0) != child || status != 0)
            die("the forked child's exec failed");
        printf("child %d\n", (int)child);
        return 0;
    }
    for (unsigned i = 0; i < BEFORE; i++)
        before_exec_alloc(i);
    char *const missing[] = {"/nonexistent/program", NULL};
    if (execv(missing[0], missing) == 0)
        die("exec of a missing program succeeded");
    for (unsigned i = 0; i < AFTER_FAILED; i++)
        after_failed_exec_alloc(i);
    fflush(stdout);
    execl("/proc/self/exe", argv[0], "second", (char *)NULL);
    die("exec of itself failed");
}
