/* A server's end: objects kept over a few epochs, then an idle spell longer than the flush
   interval before the exit's teardown frees them (test/t_idle_exit.sh). */
#include <stdlib.h>
#include <unistd.h>
#include "churn.h"

#define EPOCHS 5
#define PER_EPOCH 50

static void *kept[EPOCHS * PER_EPOCH];

__attribute__((noinline)) static void *keep_one(size_t size)
{
    return malloc(size);
}

int main(void)
{
    for (int e = 0; e < EPOCHS; e++) {
        churn_epoch_begin();
        for (int i = 0; i < PER_EPOCH; i++)
            kept[e * PER_EPOCH + i] = keep_one(64);
        usleep(5000); /* the writer reads the allocator's counters for each epoch */
    }
    churn_epoch_begin();
    usleep(200000);
    for (int i = 0; i < EPOCHS * PER_EPOCH; i++)
        free(kept[i]);
    return 0;
}
