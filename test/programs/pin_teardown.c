/* Survivors that pin spans, and when: 150 epochs each fill pages with 512 objects and keep
   one in 16 (one in 64 after epoch 100); in epoch 101 a collection frees 15 of every 16 of
   those kept so far; after the last epoch the teardown frees everything.  The most pinned
   bytes are at the end of epoch 100 (3,200 survivors), the state before the teardown has
   600, and the end none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"

#define EPOCHS 150
#define PER_EPOCH 512

static void *kept[EPOCHS * PER_EPOCH / 16];
static size_t nkept;

__attribute__((noinline)) static void fill(unsigned keep_every)
{
    void *batch[PER_EPOCH];
    for (int i = 0; i < PER_EPOCH; i++) {
        if (!(batch[i] = malloc(64)))
            abort();
        memset(batch[i], 7, 64);
    }
    for (int i = 0; i < PER_EPOCH; i++) {
        if (i % keep_every == 0)
            kept[nkept++] = batch[i];
        else
            free(batch[i]);
    }
}

__attribute__((noinline)) static void collect(void)
{
    size_t left = 0;
    for (size_t i = 0; i < nkept; i++) {
        if (i % 16 == 0)
            kept[left++] = kept[i];
        else
            free(kept[i]);
    }
    nkept = left;
}

int main(void)
{
    for (int e = 0; e < EPOCHS; e++) {
        churn_epoch_begin();
        if (e == 100)
            collect();
        fill(e < 100 ? 16 : 64);
    }
    churn_epoch_begin();
    printf("%zu kept before the teardown\n", nkept);
    for (size_t i = 0; i < nkept; i++)
        free(kept[i]);
    return 0;
}
