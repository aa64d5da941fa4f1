/*
 * Calls the two stripped libraries of nodebug_lib.c (liba.so, libb.so) once an epoch for ten
 * epochs and keeps what they return: the text report's warnings about the two modules without
 * debug info are alike but for their paths.
 */
#include <stdio.h>
#include <stdlib.h>

#include "churn.h"

void *a_keep(size_t n);
void *b_keep(size_t n);

int main(void)
{
    void *kept[20];
    for (int i = 0; i < 10; i++) {
        churn_epoch_begin();
        kept[2 * i] = a_keep(64);
        kept[2 * i + 1] = b_keep(96);
        if (!kept[2 * i] || !kept[2 * i + 1])
            return 1;
    }
    printf("%p\n", kept[0]);
    return 0;
}
