/*
 * Known peak and temporary allocations.  "temporary": TEMPS blocks allocated and freed at
 * once in tmp_alloc (each a temporary allocation), PAIRS pairs from pair_alloc freed only
 * after both are allocated (none is), and REALLOCS blocks from grow_start grown by
 * realloc in grow_more and freed (the first block's free is the realloc's, right after it:
 * both are temporary).  "peak": HOLD blocks of HOLD_SIZE in peak_hold stay live while
 * SPIKES rounds allocate SPIKE blocks of SPIKE_SIZE in peak_spike and free them in
 * allocation order (none is temporary); the heap peaks with all of one round live; then the
 * held blocks go and LEFT blocks from after_peak stay live to the end.
 */
#include "probe.h"

#define TEMPS 3000
#define PAIRS 2000
#define REALLOCS 500
#define HOLD 1000
#define HOLD_SIZE 1000
#define SPIKES 20
#define SPIKE 10
#define SPIKE_SIZE 5000
#define LEFT 200

/* Each callsite a function of its own, the allocation not a tail call (keep), so that every
   stack names it. */
#define SITE(name, call)                                                                      \
    static __attribute__((noipa)) void *name                                                 \
    {                                                                                         \
        void *p = call;                                                                       \
        keep(p);                                                                              \
        return p;                                                                             \
    }
SITE(tmp_alloc(size_t n), malloc(n))
SITE(pair_alloc(size_t n), malloc(n))
SITE(grow_start(size_t n), malloc(n))
SITE(grow_more(void *old, size_t n), realloc(old, n))
SITE(peak_hold(size_t n), malloc(n))
SITE(peak_spike(size_t n), malloc(n))
SITE(after_peak(size_t n), malloc(n))

static void *checked(void *p)
{
    if (!p)
        die("allocation failed");
    return p;
}

int main(void)
{
    static void *hold[HOLD], *spike[SPIKE];
    phase("temporary");
    for (int i = 0; i < TEMPS; i++)
        free(checked(tmp_alloc(64 + (size_t)(i % 5) * 16)));
    for (int i = 0; i < PAIRS; i++) {
        void *pair[2];
        for (int k = 0; k < 2; k++)
            pair[k] = checked(pair_alloc(48));
        free(pair[0]);
        free(pair[1]);
    }
    for (int i = 0; i < REALLOCS; i++)
        free(checked(grow_more(checked(grow_start(24)), 6000)));
    phase("peak");
    for (int i = 0; i < HOLD; i++)
        hold[i] = checked(peak_hold(HOLD_SIZE));
    for (int r = 0; r < SPIKES; r++) {
        for (int i = 0; i < SPIKE; i++)
            spike[i] = checked(peak_spike(SPIKE_SIZE));
        for (int i = 0; i < SPIKE; i++)
            free(spike[i]);
    }
    for (int i = 0; i < HOLD; i++)
        free(hold[i]);
    for (int i = 0; i < LEFT; i++)
        checked(after_peak(HOLD_SIZE)); /* live to the end */
    phase("end");
    phases_print();
    printf("temps %d pairs %d reallocs %d hold %d %d spike %d %d rounds %d left %d\n", TEMPS,
           PAIRS, REALLOCS, HOLD, HOLD_SIZE, SPIKE, SPIKE_SIZE, SPIKES, LEFT);
    return 0;
}
