/*
 * CHURN_STACK_SAMPLE (test/t_stack_sample.sh).  Phase "work" runs TURNS turns of the same
 * loop: each turn keeps one object from keep_one() (never freed) and makes and frees one
 * temporary at each of TEMPS distinct callsites, always in the same order.  TEMPS equals the
 * sample rate the test sets, so a sampler with a fixed gap would walk one of those callsites
 * every time and never the others.
 */
#include "probe.h"

#define TURNS 40000
#define TEMPS 10

static void *volatile sink;

#define TEMP(n)                                                                              \
    static __attribute__((noinline)) void temp##n(void)                                      \
    {                                                                                        \
        void *p = malloc(16 * (n + 1));                                                      \
        if (!p)                                                                              \
            die("malloc failed");                                                            \
        sink = p;                                                                            \
        free(p);                                                                             \
    }
TEMP(0) TEMP(1) TEMP(2) TEMP(3) TEMP(4) TEMP(5) TEMP(6) TEMP(7) TEMP(8) TEMP(9)

static __attribute__((noinline)) void keep_one(void)
{
    void *p = malloc(100);
    if (!p)
        die("malloc failed");
    keep(p);
}

int main(void)
{
    phase("work");
    for (int i = 0; i < TURNS; i++) {
        keep_one();
        temp0(); temp1(); temp2(); temp3(); temp4();
        temp5(); temp6(); temp7(); temp8(); temp9();
    }
    phase("after");
    phases_print();
    return 0;
}
