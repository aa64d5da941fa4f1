/*
 * mimalloc linked into the executable, keeping what it allocates: 40 steps 100 ms apart, each
 * 256 mi_malloc calls of 4 KiB that are touched and kept, so RSS grows by 40 MiB over about
 * four seconds.  Stripped, the executable keeps none of mimalloc's names and libchurn cannot
 * trace it: the blind-spot detector must say so.  Prints the bytes it allocated as
 * test/programs/pool_alloc.c does.
 */
#include <mimalloc.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define STEPS 40
#define PER_STEP 256
#define SIZE 4096

static void *kept[STEPS * PER_STEP];

int main(void)
{
    unsigned long sum = 0;
    for (int i = 0; i < STEPS; i++) {
        for (int k = 0; k < PER_STEP; k++) {
            char *p = mi_malloc(SIZE);
            if (!p) {
                fprintf(stderr, "mi_malloc failed\n");
                return 1;
            }
            memset(p, i + 1, SIZE);
            sum += (unsigned char)p[SIZE / 2];
            kept[i * PER_STEP + k] = p;
        }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    printf("mimalloc allocated %lu bytes, sum %lu\n", (unsigned long)STEPS * PER_STEP * SIZE, sum);
    return 0;
}
