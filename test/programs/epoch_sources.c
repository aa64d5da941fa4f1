/*
 * Epochs begun from outside the program's own churn_epoch_begin() calls:
 *   `epoch_sources signal`  raises SIGUSR2 (run with CHURN_EPOCH_SIGNAL=USR2) around a known
 *                           pattern of SIGNAL_ALLOCS mallocs, so that pattern is one epoch;
 *   `epoch_sources timer`   (run with CHURN_EPOCH_MS) makes TIMER_ALLOCS mallocs in small
 *                           batches while the shim's timer begins epochs under it, until at
 *                           least two epochs have passed, then frees them all later.
 * The program waits for churn_epoch_current() to move instead of sleeping for a fixed time,
 * bounded by WAIT_LIMIT_MS, and prints `range NAME FIRST LAST [COUNT]` for the epochs each
 * pattern touched.
 */
#include <signal.h>
#include <time.h>

#include "probe.h"

#define SIGNAL_ALLOCS 9
#define SIGNAL_SIZE 333
#define TIMER_BATCHES 4000
#define TIMER_BATCH 5
#define TIMER_SIZE 64
#define WAIT_LIMIT_MS 30000

static void *blocks[TIMER_BATCHES * TIMER_BATCH];

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Returns the epoch once it differs from `from`; fails past the wait limit. */
static uint64_t wait_for_epoch_after(uint64_t from)
{
    for (long waited = 0; waited < WAIT_LIMIT_MS; waited++) {
        uint64_t now = churn_epoch_current();
        if (now != from)
            return now;
        pause_ms(1);
    }
    die("no new epoch within %d ms", WAIT_LIMIT_MS);
    return 0;
}

static __attribute__((noinline)) void *source_block(size_t size, unsigned tag)
{
    void *p = malloc(size);
    if (!p)
        die("malloc failed");
    fill(p, size, tag);
    return p;
}

static void signal_mode(void)
{
    uint64_t before = churn_epoch_current();
    raise(SIGUSR2);
    uint64_t pattern = wait_for_epoch_after(before);
    for (unsigned i = 0; i < SIGNAL_ALLOCS; i++)
        blocks[i] = source_block(SIGNAL_SIZE, i);
    for (unsigned i = 0; i < SIGNAL_ALLOCS; i++) {
        if (!filled(blocks[i], SIGNAL_SIZE, i))
            die("block %u was overwritten", i);
        free(blocks[i]);
    }
    raise(SIGUSR2);
    wait_for_epoch_after(pattern);
    printf("range signal %llu %llu\n", (unsigned long long)pattern,
           (unsigned long long)pattern);
}

static void timer_mode(void)
{
    uint64_t first = churn_epoch_current();
    unsigned n = 0;
    for (unsigned b = 0; b < TIMER_BATCHES; b++) {
        for (unsigned i = 0; i < TIMER_BATCH; i++, n++)
            blocks[n] = source_block(TIMER_SIZE, n);
        if (churn_epoch_current() >= first + 2)
            break;
        pause_ms(1);
    }
    uint64_t last = churn_epoch_current();
    if (last < first + 2)
        die("the timer began fewer than two epochs during %u batches", TIMER_BATCHES);
    /* The frees start in a later epoch, so the two ranges do not overlap. */
    uint64_t frees_first = wait_for_epoch_after(last);
    for (unsigned i = 0; i < n; i++) {
        if (!filled(blocks[i], TIMER_SIZE, i))
            die("block %u was overwritten", i);
        free(blocks[i]);
    }
    uint64_t frees_last = churn_epoch_current();
    wait_for_epoch_after(frees_last);
    printf("range timer %llu %llu %u\n", (unsigned long long)first, (unsigned long long)last, n);
    printf("range timer_frees %llu %llu %u\n", (unsigned long long)frees_first,
           (unsigned long long)frees_last, n);
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "signal") && strcmp(argv[1], "timer"))) {
        fprintf(stderr, "usage: epoch_sources signal|timer\n");
        return 2;
    }
    if (!churn_epoch_current)
        die("not running under libchurn");
    if (!strcmp(argv[1], "signal"))
        signal_mode();
    else
        timer_mode();
    return 0;
}
