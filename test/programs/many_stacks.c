/*
 * `many_stacks N [EPOCHS]`: N allocations, each from a distinct call stack, spread over
 * EPOCHS epochs (default 4): stack k runs through the 16 functions f0..f15 in the order of
 * k's hexadecimal digits, so N distinct stacks share their outer frames as a real program's
 * do.  Every object stays live to the end.  For the flame graph tests: the drawing must stay
 * fast with tens of thousands of stacks.
 */
#include <stdio.h>
#include <stdlib.h>

#include "churn.h"

#define LEVELS 4

typedef void (*step_fn)(unsigned long k, int level);
static const step_fn steps[16];
static void *kept[1 << 17];
static unsigned long nkept;

/* Each function calls the next one by the next digit; the barrier keeps the call a call. */
#define STEP(n)                                                                            \
    static __attribute__((noinline)) void f##n(unsigned long k, int level)                \
    {                                                                                      \
        if (level == 0) {                                                                  \
            kept[nkept] = malloc(16 + (k % 7) * 8);                                        \
            if (!kept[nkept++]) {                                                          \
                fputs("many_stacks: out of memory\n", stderr);                            \
                exit(1);                                                                   \
            }                                                                              \
            return;                                                                        \
        }                                                                                  \
        steps[k & 15](k >> 4, level - 1);                                                  \
        __asm__ volatile("" ::: "memory");                                                 \
    }
STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)
STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15)

static const step_fn steps[16] = {f0, f1, f2,  f3,  f4,  f5,  f6,  f7,
                                  f8, f9, f10, f11, f12, f13, f14, f15};

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 50000;
    unsigned long epochs = argc > 2 ? strtoul(argv[2], NULL, 10) : 4;
    if (n > sizeof kept / sizeof kept[0] || n > 1UL << (4 * (LEVELS + 1)) || !epochs) {
        fputs("usage: many_stacks N [EPOCHS] (N <= 131072)\n", stderr);
        return 2;
    }
    for (unsigned long k = 0; k < n; k++) {
        if (k % ((n + epochs - 1) / epochs) == 0)
            churn_epoch_begin();
        steps[k & 15](k >> 4, LEVELS);
    }
    printf("%lu allocations from %lu stacks\n", nkept, n);
    return 0;
}
