/*
 * Growth that malloc never sees, in a run too short for the shim's sampler (three samples
 * half a second apart): `raw_mmap MODE STEPS` maps STEPS mappings of 10 MiB, one every 25 ms,
 * and writes every page of each, so RSS grows by STEPS x 10 MiB (150 MiB for 15 steps in
 * about 0.4 s) while the traced heap holds a few small blocks.  MODE says how it maps:
 * `libc`, through mmap() (the shim records each call, with its stack); `syscall`, through
 * syscall(SYS_mmap), which nothing traces.  A third argument `epochs` begins an epoch
 * (churn_epoch_begin) before each step; without it the run is one epoch.  The mappings stay
 * until the exit.  Built with -DSYSCALL_ONLY the program has no call of mmap() at all (only
 * `syscall` works), so that no object of its own is a candidate for the shim's culprit; with
 * -DSTEP_MS=N the steps are N ms apart.  Prints the bytes it mapped.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "churn.h"

#define STEP_BYTES ((size_t)10 << 20)
#ifndef STEP_MS
#define STEP_MS 25
#endif

__attribute__((noinline)) static char *grow_mapping(int raw)
{
    void *p;
#ifdef SYSCALL_ONLY
    (void)raw;
#else
    if (!raw)
        p = mmap(NULL, STEP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    else
#endif
    p = (void *)syscall(SYS_mmap, NULL, STEP_BYTES, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memset(p, 0x5a, STEP_BYTES);
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "libc") && strcmp(argv[1], "syscall"))) {
        fprintf(stderr, "usage: raw_mmap libc|syscall STEPS [epochs]\n");
        return 2;
    }
    int raw = !strcmp(argv[1], "syscall");
    int steps = atoi(argv[2]);
    int epochs = argc > 3 && !strcmp(argv[3], "epochs");
    unsigned long sum = 0;
    char *names = malloc(64); /* a little traced heap beside the mappings */
    for (int i = 0; i < steps; i++) {
        if (epochs)
            churn_epoch_begin();
        char *m = grow_mapping(raw);
        sum += (unsigned char)m[i * 4096];
        snprintf(names, 64, "step %d", i);
        struct timespec ts = {STEP_MS / 1000, STEP_MS % 1000 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (sum != (unsigned long)steps * 0x5a) {
        fprintf(stderr, "raw_mmap: the mappings do not hold what was written\n");
        return 1;
    }
    free(names);
    printf("%zu\n", (size_t)steps * STEP_BYTES);
    return 0;
}
