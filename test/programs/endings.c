/*
 * Ways a traced process ends: `endings MODE` makes WORK_ALLOCS mallocs of WORK_SIZE bytes in
 * the "work" epoch, prints its phases, and then ends by MODE: `exit` (exit(3)), `_exit`
 * (_exit(4): no atexit handlers, no destructors), `segv` (a write through a null pointer, no
 * handler of its own).  The trace must hold the work epoch whichever way it ends.
 */
#include <unistd.h>

#include "probe.h"

#define WORK_ALLOCS 17
#define WORK_SIZE 700

static void *kept[WORK_ALLOCS];

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "exit") && strcmp(argv[1], "_exit") &&
                      strcmp(argv[1], "segv"))) {
        fprintf(stderr, "usage: endings exit|_exit|segv\n");
        return 2;
    }
    phase("work");
    for (unsigned i = 0; i < WORK_ALLOCS; i++) {
        kept[i] = malloc(WORK_SIZE);
        if (!kept[i])
            die("malloc failed");
        fill(kept[i], WORK_SIZE, i);
    }
    phase("end");
    for (unsigned i = 0; i < WORK_ALLOCS; i++)
        if (!filled(kept[i], WORK_SIZE, i))
            die("block %u was overwritten", i);
    phases_print();
    fflush(stdout);
    if (!strcmp(argv[1], "exit"))
        exit(3);
    if (!strcmp(argv[1], "_exit"))
        _exit(4);
    volatile int *nowhere = NULL;
    *nowhere = 0;
    return 1;
}
