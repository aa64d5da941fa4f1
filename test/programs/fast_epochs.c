/* Epochs that end faster than the writer reads the allocator's counters (at most once a
   millisecond): 1500 epochs, each begun by SIGUSR2 (CHURN_EPOCH_SIGNAL=USR2) right after one
   more 1000-byte object that stays live, so the heap in use grows in every epoch; every
   hundredth epoch lasts 3 ms, long enough for a reading of its own. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EPOCHS 1500

static void *kept[EPOCHS];

int main(void)
{
    for (int e = 0; e < EPOCHS; e++) {
        kept[e] = malloc(1000);
        if (!kept[e])
            abort();
        memset(kept[e], 1, 1000);
        if (e % 100 == 99)
            nanosleep(&(struct timespec){0, 3000000}, NULL);
        raise(SIGUSR2);
    }
    unsigned sum = 0;
    for (int e = 0; e < EPOCHS; e++)
        sum += *(unsigned char *)kept[e];
    printf("checksum %u\n", sum);
    for (int e = 0; e < EPOCHS; e++)
        free(kept[e]);
    return 0;
}
