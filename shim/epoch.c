/*
 * Epochs: one process-wide counter.  Whoever ends an epoch (churn_epoch(), the epoch signal,
 * the writer's timer) claims it with one atomic add and publishes its end time, CPU time and
 * RSS in a slot of a small ring; the writer closes the epoch once the slot is published and
 * every event tagged with it has been drained.  Advancing is async-signal-safe.
 */
#include <signal.h>
#include <string.h>

#include "shim.h"

_Atomic uint64_t churn_epoch_now;
churn_tick churn_ticks[CHURN_TICK_SLOTS];
uint64_t churn_start_ns, churn_start_cpu_ns;
static uint64_t next_timer_ns;

static uint64_t advance(int read_counters)
{
    uint64_t ended = atomic_fetch_add(&churn_epoch_now, 1);
    churn_tick *t = &churn_ticks[ended % CHURN_TICK_SLOTS];
    t->end_ns = churn_now_ns();
    t->cpu_ns = churn_cpu_ns();
    t->rss = churn_rss_bytes();
    /* Read here, on the thread that ends the epoch, the counters match the live set the
       events describe at this instant (workerd's tcmalloc: exactly, docs/workerd.md). */
    t->counters_read = read_counters;
    if (read_counters)
        churn_allocator_counters(t->counters);
    atomic_store_explicit(&t->seq, ended + 1, memory_order_release);
    /* Wake the writer only now and then: epochs can come by the million. */
    if ((ended & 255) == 255)
        churn_writer_poke();
    return ended + 1;
}

uint64_t churn_epoch_advance(void)
{
    return advance(0);
}

uint64_t churn_epoch_advance_in_program(void)
{
    int guarded = churn_in_shim;
    churn_in_shim = 1;
    uint64_t e = advance(churn_allocator()->counters_at_tick && churn_main_started());
    churn_in_shim = guarded;
    return e;
}

CHURN_API uint64_t churn_epoch(void)
{
    if (atomic_load(&churn_state) != CHURN_ON)
        return atomic_load(&churn_epoch_now);
    return churn_epoch_advance_in_program();
}

CHURN_API uint64_t churn_epoch_current(void)
{
    return atomic_load(&churn_epoch_now);
}

static void on_epoch_signal(int sig)
{
    (void)sig;
    if (atomic_load(&churn_state) == CHURN_ON)
        churn_epoch_advance();
}

void churn_epoch_install_triggers(void)
{
    churn_start_ns = churn_now_ns();
    churn_start_cpu_ns = churn_cpu_ns();
    if (churn_opt.epoch_signal) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_epoch_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(churn_opt.epoch_signal, &sa, NULL);
    }
    if (churn_opt.epoch_ms)
        next_timer_ns = churn_start_ns + churn_opt.epoch_ms * 1000000u;
}

/* Called by the writer, which is the timer: no extra thread, no signal in the program. */
int churn_epoch_timer_due(uint64_t now_ns)
{
    if (!churn_opt.epoch_ms || now_ns < next_timer_ns)
        return 0;
    next_timer_ns += churn_opt.epoch_ms * 1000000u;
    if (next_timer_ns <= now_ns)
        next_timer_ns = now_ns + churn_opt.epoch_ms * 1000000u;
    return 1;
}
