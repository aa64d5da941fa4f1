/* One function, fill_slot, reached by two stacks over 10 epochs:
   base_fill   100 objects of 32 bytes in epoch 1, held until the teardown   -> steady
   keep_more   10 objects of 64 bytes an epoch, freed by the teardown         -> kept_until_exit
   The steady base is more than half of what keep_more accumulates, so the sum of the two
   series is not 1.5 times its mean at the end: the function's class has to come from its
   stacks' classes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"

#define EPOCHS 10
#define PER_EPOCH 10
#define BASE 100

static void *base[BASE], *kept[EPOCHS * PER_EPOCH];

__attribute__((noinline)) static void *fill_slot(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    memset(p, 1, n);
    return p;
}

__attribute__((noinline)) static void base_fill(void)
{
    for (int i = 0; i < BASE; i++)
        base[i] = fill_slot(32);
}

__attribute__((noinline)) static void keep_more(int e)
{
    for (int i = 0; i < PER_EPOCH; i++)
        kept[e * PER_EPOCH + i] = fill_slot(64);
}

int main(void)
{
    churn_epoch_begin();
    base_fill();
    for (int e = 0; e < EPOCHS; e++) { /* no branch: one call of keep_more, one stack */
        keep_more(e);
        churn_epoch_begin(); /* the last one begins the teardown */
    }
    unsigned sum = 0;
    for (int i = 0; i < EPOCHS * PER_EPOCH; i++)
        sum += *(unsigned char *)kept[i];
    printf("checksum %u\n", sum);
    for (int i = 0; i < EPOCHS * PER_EPOCH; i++)
        free(kept[i]);
    for (int i = 0; i < BASE; i++)
        free(base[i]);
    return 0;
}
