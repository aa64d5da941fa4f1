/* tick() is called 50 times and keeps one 256-byte object each time: with CHURN_EPOCH_AT=tick
   every call begins an epoch.  t_debug_symbols.sh strips it, so tick is named only in its
   debug file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *kept[50];

__attribute__((noinline)) void tick(int i)
{
    kept[i] = malloc(256);
    if (kept[i])
        memset(kept[i], i, 256);
}

int main(void)
{
    for (int i = 0; i < 50; i++)
        tick(i);
    unsigned sum = 0;
    for (int i = 0; i < 50; i++)
        sum += kept[i] ? *(unsigned char *)kept[i] : 0;
    printf("sum %u\n", sum);
    return 0;
}
