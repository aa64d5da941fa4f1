/*
 * Known per-epoch pattern: in step k (k = 1..STEPS, one epoch each) the program makes k
 * mallocs of 100 bytes, k - 1 from temp_block() that it frees in the same step and one from
 * keep_block() that it keeps.  So step k has exactly k allocs, k - 1 frees, 100 k bytes
 * allocated, 100 (k - 1) freed, and live objects grow by one (100 bytes) per step.
 */
#include "probe.h"

#define STEPS 12
#define BLOCK 100

static void *kept[STEPS + 1];

static __attribute__((noinline)) void *temp_block(unsigned tag)
{
    void *p = malloc(BLOCK);
    if (!p)
        die("malloc failed");
    fill(p, BLOCK, tag);
    return p;
}

static __attribute__((noinline)) void *keep_block(unsigned tag)
{
    void *p = malloc(BLOCK);
    if (!p)
        die("malloc failed");
    fill(p, BLOCK, tag);
    kept[tag] = p;
    return p;
}

static __attribute__((noinline)) void step(unsigned k)
{
    void *temps[STEPS];
    for (unsigned i = 0; i + 1 < k; i++)
        temps[i] = temp_block(100 + i);
    keep(keep_block(k));
    for (unsigned i = 0; i + 1 < k; i++) {
        if (!filled(temps[i], BLOCK, 100 + i))
            die("step %u: temporary %u was overwritten", k, i);
        free(temps[i]);
    }
}

int main(void)
{
    for (unsigned k = 1; k <= STEPS; k++) {
        phase_numbered("step", k);
        step(k);
    }
    phase("end");
    for (unsigned k = 1; k <= STEPS; k++)
        if (!filled(kept[k], BLOCK, k))
            die("kept block of step %u was overwritten", k);
    phases_print();
    return 0;
}
