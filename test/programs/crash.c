/*
 * A traced process that does not end normally: `crash abort` makes WORK_ALLOCS mallocs of
 * WORK_SIZE bytes in the "work" epoch and then calls abort(); `crash hang` does the same work,
 * prints its phases and then sleeps until it is killed (the test sends SIGKILL once the work
 * has reached the trace file).  Either way the trace must still hold the work.
 */
#include <unistd.h>

#include "probe.h"

#define WORK_ALLOCS 13
#define WORK_SIZE 500

static void *kept[WORK_ALLOCS];

static __attribute__((noinline)) void *work_block(unsigned i)
{
    void *p = malloc(WORK_SIZE);
    if (!p)
        die("malloc failed");
    fill(p, WORK_SIZE, i);
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "abort") && strcmp(argv[1], "hang"))) {
        fprintf(stderr, "usage: crash abort|hang\n");
        return 2;
    }
    phase("work");
    for (unsigned i = 0; i < WORK_ALLOCS; i++)
        kept[i] = work_block(i);
    phase("idle");
    for (unsigned i = 0; i < WORK_ALLOCS; i++)
        if (!filled(kept[i], WORK_SIZE, i))
            die("block %u was overwritten", i);
    phases_print();
    fflush(stdout);
    if (!strcmp(argv[1], "abort"))
        abort();
    for (;;)
        pause();
}
