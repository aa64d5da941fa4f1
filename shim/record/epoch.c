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

/* The process's CPU time and RSS are two system calls, a few microseconds each in a VM, and
   workerd ends thousands of epochs a second (one per request): read at every tick, they were
   3 % of its main thread.  So a tick reuses the last reading while it is under READING_NS old:
   an epoch's RSS is at most that much older than its end, and an epoch that ends sooner shows
   no CPU time of its own, which the next one read carries (sums over epochs stay exact).
   Epochs a millisecond apart or more read at every tick.  A seqlock, so that any thread, or a
   signal handler, can read or publish it without waiting: one that finds it being written
   reads for itself. */
#define READING_NS 1000000u
static struct {
    _Atomic uint64_t seq; /* odd while written */
    _Atomic uint64_t ns, cpu, rss;
} reading;

static void read_cpu_rss(churn_tick *t, uint64_t now, int fresh)
{
    uint64_t s = atomic_load_explicit(&reading.seq, memory_order_acquire);
    if (!fresh && !(s & 1) && s) {
        uint64_t ns = atomic_load_explicit(&reading.ns, memory_order_relaxed);
        uint64_t cpu = atomic_load_explicit(&reading.cpu, memory_order_relaxed);
        uint64_t rss = atomic_load_explicit(&reading.rss, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&reading.seq, memory_order_relaxed) == s && now >= ns &&
            now - ns < READING_NS) {
            t->cpu_ns = cpu;
            t->rss = rss;
            return;
        }
    }
    t->cpu_ns = churn_cpu_ns();
    t->rss = churn_rss_bytes();
    s = atomic_load_explicit(&reading.seq, memory_order_relaxed);
    if ((s & 1) || !atomic_compare_exchange_strong(&reading.seq, &s, s + 1))
        return;
    atomic_store_explicit(&reading.ns, now, memory_order_relaxed);
    atomic_store_explicit(&reading.cpu, t->cpu_ns, memory_order_relaxed);
    atomic_store_explicit(&reading.rss, t->rss, memory_order_relaxed);
    atomic_store_explicit(&reading.seq, s + 2, memory_order_release);
}

/* A forked child's CPU time and RSS are its own. */
void churn_epoch_after_fork_child(void)
{
    atomic_store(&reading.seq, 0);
}

#define POKE_NS 2000000u
static _Atomic uint64_t last_poke_ns;

static int writer_reads_counters(void)
{
    const churn_allocator_info *a = churn_allocator();
    return a->ncounters && !a->counters_at_tick;
}

/* The tick is read whole before the epoch is claimed, and published a few stores after the
   claim: the writer closes epochs in order and waits for every claimed one, so nothing may
   come between the claim and the publication that can block, be a cancellation point (a
   thread cancelled there never publishes) or fail. */
static uint64_t advance(int read_counters, int fresh)
{
    churn_tick now;
    now.end_ns = churn_now_ns();
    read_cpu_rss(&now, now.end_ns, fresh);
    /* Read here, on the thread that ends the epoch, the counters match the live set the
       events describe at this instant (workerd's tcmalloc: exactly, docs/workerd.md). */
    now.counters_read = read_counters;
    if (read_counters)
        churn_allocator_counters(now.counters);
    uint64_t ended = atomic_fetch_add(&churn_epoch_now, 1);
    churn_tick *t = &churn_ticks[ended % CHURN_TICK_SLOTS];
    t->end_ns = now.end_ns;
    t->cpu_ns = now.cpu_ns;
    t->rss = now.rss;
    t->counters_read = read_counters;
    if (read_counters)
        memcpy(t->counters, now.counters, sizeof now.counters);
    atomic_store_explicit(&t->seq, ended + 1, memory_order_release);
    /* Wake the writer only now and then: epochs can come by the million.  But an allocator
       whose counters the writer reads (glibc's mallinfo2) needs the writer soon after the
       epoch ended, or an idle writer (50 ms between looks) gives every epoch shorter than
       that a reading of a later one, and no free-resident figure: so at most once per
       POKE_NS, which bounds what the wakes cost the program's thread (tens of microseconds
       each in this VM, only when the writer sleeps). */
    uint64_t last = atomic_load_explicit(&last_poke_ns, memory_order_relaxed);
    if ((ended & 255) == 255 ||
        (writer_reads_counters() && now.end_ns - last >= POKE_NS &&
         atomic_compare_exchange_strong(&last_poke_ns, &last, now.end_ns)))
        churn_writer_poke();
    return ended + 1;
}

uint64_t churn_epoch_advance(void)
{
    return advance(0, 0);
}

/* The last epoch of the trace (exit, exec) reads anew: nothing comes after it to carry its CPU
   time. */
uint64_t churn_epoch_advance_last(void)
{
    return advance(0, 1);
}

uint64_t churn_epoch_advance_in_program(void)
{
    CHURN_GUARD();
    /* Not under CHURN_SAMPLE_BYTES, whose point is to cost next to nothing: a reading of
       tcmalloc's counters took longer than the rest of a workerd request's tracing.  The
       epoch then has the writer's reading of them, at most about 1 ms old. */
    return advance(churn_allocator()->counters_at_tick && churn_main_started() &&
                       !churn_opt.sample_bytes,
                   0);
}

CHURN_API uint64_t churn_epoch(void)
{
    if (atomic_load(&churn_state) != CHURN_ON)
        return atomic_load(&churn_epoch_now);
    return churn_epoch_advance_in_program();
}

/* churn.h's inline as a symbol: for programs that cannot include the header, which find it
   with dlsym (Python's ctypes.CDLL(None)) or declare it weak by hand.  C programs keep the
   inline, which reaches churn_epoch the same way. */
CHURN_API uint64_t churn_epoch_begin(void)
{
    return churn_epoch();
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
