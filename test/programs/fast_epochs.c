/* Epochs that end faster than the writer reads the allocator's counters (at most once a
   millisecond): 1500 epochs, each begun by SIGUSR2 (CHURN_EPOCH_SIGNAL=USR2) right after one
   more 1000-byte object that stays live, so the heap in use grows in every epoch; every
   hundredth epoch lasts 3 ms, long enough for a reading of its own.  `fast_epochs paced`: 100
   epochs of 20 ms each, as a server's requests are paced by their clients. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EPOCHS 1500

static void *kept[EPOCHS];

int main(int argc, char **argv)
{
    int paced = argc == 2 && !strcmp(argv[1], "paced");
    int epochs = paced ? 100 : EPOCHS;
    for (int e = 0; e < epochs; e++) {
        kept[e] = malloc(1000);
        if (!kept[e])
            abort();
        memset(kept[e], 1, 1000);
        if (paced || e % 100 == 99)
            nanosleep(&(struct timespec){0, paced ? 20000000 : 3000000}, NULL);
        raise(SIGUSR2);
    }
    unsigned sum = 0;
    for (int e = 0; e < epochs; e++)
        sum += *(unsigned char *)kept[e];
    printf("checksum %u\n", sum);
    for (int e = 0; e < epochs; e++)
        free(kept[e]);
    return 0;
}
