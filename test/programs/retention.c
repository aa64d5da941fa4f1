/* One callsite for each retention class (docs/analyzer.md), over 300 epochs:
   leak_one      one object an epoch, never freed                    -> leaked
   keep_one      one object an epoch, freed after the last epoch     -> kept_until_exit
   collect_one   one object an epoch until 200, all freed in epoch 200 -> reclaimed
   pipeline_one  one object an epoch, freed three epochs later      -> steady
   With "cut" the process ends with SIGKILL after its last epoch: no exit record, so what is
   still live is "live", neither leaked nor kept. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "churn.h"

#define EPOCHS 300
#define COLLECT_AT 200

void *leaked[EPOCHS], *kept[EPOCHS], *collected[EPOCHS], *ring[4];

static void *object(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    memset(p, 1, n);
    return p;
}

__attribute__((noinline)) static void leak_one(int e) { leaked[e] = object(24); }
__attribute__((noinline)) static void keep_one(int e) { kept[e] = object(40); }
__attribute__((noinline)) static void collect_one(int e) { collected[e] = object(56); }
__attribute__((noinline)) static void pipeline_one(int e)
{
    free(ring[e % 4]);
    ring[e % 4] = object(72);
}

int main(int argc, char **argv)
{
    int cut = argc > 1 && strcmp(argv[1], "cut") == 0;
    for (int e = 0; e < EPOCHS; e++) {
        churn_epoch_begin();
        leak_one(e);
        keep_one(e);
        if (e < COLLECT_AT)
            collect_one(e);
        if (e == COLLECT_AT)
            for (int i = 0; i < COLLECT_AT; i++)
                free(collected[i]);
        pipeline_one(e);
    }
    churn_epoch_begin();
    unsigned sum = 0;
    for (int e = 0; e < EPOCHS; e++)
        sum += *(unsigned char *)leaked[e] + *(unsigned char *)kept[e];
    printf("checksum %u\n", sum);
    fflush(stdout);
    if (cut) {
        usleep(300 * 1000); /* the writer flushes meanwhile (CHURN_FLUSH_MS below this) */
        raise(SIGKILL);
    }
    for (int e = 0; e < EPOCHS; e++)
        free(kept[e]);
    for (int i = 0; i < 4; i++)
        free(ring[i]);
    return 0;
}
