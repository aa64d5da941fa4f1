/* One allocating function reached from four callers, each caller active for a quarter of
   the run: every callsite's live series is a ramp between two plateaus, their sum a straight
   line of one object per epoch.  Also a leak through the C library (strdup), which belongs
   to the program's function that called it, and a temporary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"

#define EPOCHS 400
#define SLOT 64

/* Read back at the end, so that the compiler keeps every allocation. */
void *kept[EPOCHS * 2];
int nkept;

__attribute__((noinline)) static void *grow_slots(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    memset(p, 0, n);
    return p;
}

__attribute__((noinline)) static void via_parser(void) { kept[nkept++] = grow_slots(SLOT); }
__attribute__((noinline)) static void via_loader(void) { kept[nkept++] = grow_slots(SLOT); }
__attribute__((noinline)) static void via_timer(void) { kept[nkept++] = grow_slots(SLOT); }
__attribute__((noinline)) static void via_socket(void) { kept[nkept++] = grow_slots(SLOT); }

__attribute__((noinline)) static void copy_name(int e)
{
    static const char name[] = "twenty-four bytes long.";
    kept[nkept++] = strdup(name + (e & 1));
}

__attribute__((noinline)) static void scratch(void)
{
    char *p = malloc(1000);
    if (!p)
        abort();
    p[0] = 1;
    free(p);
}

int main(void)
{
    void (*const callers[4])(void) = {via_parser, via_loader, via_timer, via_socket};
    for (int e = 0; e < EPOCHS; e++) {
        churn_epoch_begin();
        callers[e / (EPOCHS / 4)]();
        if (e % 2 == 0)
            copy_name(e);
        scratch();
    }
    churn_epoch_begin();
    unsigned long sum = 0;
    for (int i = 0; i < nkept; i++)
        sum += *(const unsigned char *)kept[i];
    printf("%d objects kept, checksum %lu\n", nkept, sum);
    return nkept == EPOCHS + EPOCHS / 2 ? 0 : 1;
}
