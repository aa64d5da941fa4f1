/*
 * Per-thread event rings.  Each thread appends to its own single-producer ring with plain
 * stores and one release store; the writer thread consumes it.  No lock is taken on the
 * allocation path.  A ring is registered on a thread's first event and recycled by the writer
 * once the thread is dead (not merely past its TLS destructors, which may still free memory)
 * and the ring is drained.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

/* How long a producer waits for room before it drops an event instead: the writer is stuck
   (a stalled disk) and the program must not be. */
#define FULL_WAIT_NS 2000000000u
/* A sleeping producer looks again this often even unwoken (the writer may be stuck). */
#define ROOM_POLL_NS 1000000u

_Atomic uint64_t churn_dropped_events;

static __thread churn_thread *self;
__thread uintptr_t churn_stack_lo, churn_stack_hi;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static churn_spinlock registry_lock;
static churn_thread *_Atomic registry;
static churn_thread *free_rings;

static void on_thread_exit(void *arg)
{
    churn_thread *t = arg;
    /* Keep the ring as self: later TLS destructors may still free memory into it. */
    atomic_store_explicit(&t->exited, 1, memory_order_release);
}

static void make_exit_key(void)
{
    pthread_key_create(&exit_key, on_thread_exit);
}

static void stack_bounds(churn_thread *t)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    /* The process's first thread: pthread_getattr_np would read /proc/self/maps with getline,
       allocating (os.c).  A fork child's thread forked from another is not: it is not on
       that stack. */
    uintptr_t lo, hi, sp = (uintptr_t)__builtin_frame_address(0);
    if (t->tid == getpid() && !churn_os_main_stack(&lo, &hi) && sp >= lo && sp < hi) {
        t->stack_lo = lo;
        t->stack_hi = hi;
        return;
    }
    if (pthread_getattr_np(pthread_self(), &attr))
        return;
    if (!pthread_attr_getstack(&attr, &addr, &size)) {
        t->stack_lo = (uintptr_t)addr;
        t->stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
}

static churn_thread *take_ring(void)
{
    churn_spin_lock(&registry_lock);
    churn_thread *t = free_rings;
    if (t)
        free_rings = t->next;
    churn_spin_unlock(&registry_lock);
    if (!t)
        t = churn_os_map(sizeof(churn_thread));
    return t;
}

churn_thread *churn_thread_current(void)
{
    return self;
}

/* A thread's ring taken and linked for the writer, without the libc calls that registering
   makes (pthread_getattr_np allocates, pthread_setspecific may). */
static churn_thread *ring_start(void)
{
    churn_thread *t = take_ring();
    if (!t)
        return NULL;
    atomic_store(&t->head, 0);
    atomic_store(&t->tail, 0);
    t->tail_seen = 0;
    t->tail_check = CHURN_RING_EVENTS / 2;
    atomic_store(&t->exited, 0);
    memset(t->cache_hash, 0, sizeof t->cache_hash);
    churn_cfi_thread_reset(&t->cfi);
    t->tid = churn_gettid();
    t->stack_lo = t->stack_hi = 0;
    t->sample_rng = ((uint32_t)t->tid * 2654435761u) ^ (uint32_t)churn_now_ns();
    t->sample_rng |= !t->sample_rng; /* xorshift never leaves 0 */
    t->sample_left = churn_stack_sample_gap(t);
    churn_spin_lock(&registry_lock);
    t->next = atomic_load_explicit(&registry, memory_order_relaxed);
    atomic_store_explicit(&registry, t, memory_order_release);
    churn_spin_unlock(&registry_lock);
    return t;
}

/* A ring started from inside the allocator (its own mmap as the process or a thread starts,
   before the thread's first traced call), which the thread's first event outside the
   allocator finishes registering. */
static __thread churn_thread *unfinished;

churn_thread *churn_thread_self(void)
{
    if (CHURN_LIKELY(self != NULL))
        return self;
    churn_thread *t = unfinished ? unfinished : ring_start();
    if (!t)
        return NULL;
    unfinished = NULL;
    /* Every unwinder mode bounds its stack reads by the stack's (unwind.c): once per thread,
       under the caller's guard, as pthread_getattr_np may allocate.  The thread may already
       run on a coroutine's stack, whose bounds a switch gave (ucontext.c). */
    stack_bounds(t);
    if (!churn_stack_hi) {
        churn_stack_lo = t->stack_lo;
        churn_stack_hi = t->stack_hi;
    }
    /* Once, and finished before any thread sets it: two threads registering first at once
       must not set a key that is not made yet (key 0, someone else's). */
    pthread_once(&key_once, make_exit_key);
    pthread_setspecific(exit_key, t);
    self = t;
    return t;
}

churn_thread *churn_thread_inside_allocator(void)
{
    if (CHURN_LIKELY(self != NULL))
        return self;
    if (!unfinished)
        unfinished = ring_start();
    return unfinished;
}

/* Producers whose ring is full sleep on room_seq, which the writer bumps as it makes room
   (only when someone waits, so draining costs no system call otherwise).  Sleeping rather
   than yielding frees this core for the writer when the two share it. */
static _Atomic uint32_t room_seq;
static _Atomic uint32_t room_waiters;

void churn_threads_room_made(void)
{
    atomic_thread_fence(memory_order_seq_cst); /* the tails stored before waiters is read */
    if (atomic_load_explicit(&room_waiters, memory_order_relaxed)) {
        atomic_fetch_add(&room_seq, 1);
        syscall(SYS_futex, &room_seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    }
}

/* A producer that found its ring full waits until a quarter of it is free, not one slot, and
   the writer stores tails and wakes waiters as often (ROOM_BATCH in writer.c): resuming at
   the first free slot made two threads that outrun the writer sleep and wake every few
   hundred events (22,000 futex calls for 12 M events of bench/threads.c). */
#define ROOM_RESUME (CHURN_RING_EVENTS / 4)

static int wait_for_room(churn_thread *t, uint64_t end)
{
    if (atomic_load(&churn_state) != CHURN_ON || !churn_writer_running() || churn_writer_is_self())
        return -1;
    uint64_t deadline = churn_now_ns() + FULL_WAIT_NS;
    int rc = 0;
    atomic_fetch_add(&room_waiters, 1);
    for (;;) {
        uint32_t seq = atomic_load(&room_seq);
        if (end - atomic_load(&t->tail) <= CHURN_RING_EVENTS - ROOM_RESUME)
            break;
        churn_writer_poke();
        churn_futex_wait(&room_seq, seq, ROOM_POLL_NS);
        if (churn_now_ns() > deadline || atomic_load(&churn_state) != CHURN_ON) {
            rc = -1;
            break;
        }
    }
    atomic_fetch_sub(&room_waiters, 1);
    return rc;
}

/* The writer is woken when the ring is half full, and again every WAKE_AGAIN events while it
   stays so; tail is read only then (or when the ring looks full). */
#define WAKE_AGAIN 1024u

/* Events that may wait for the writer stop short of the ring's last RING_RESERVE slots and
   wait there; those are kept for the events that cannot wait, a mapping the allocator makes
   while it holds its lock, which a ring full of the program's own events dropped when the
   writer fell behind (12 of php's under a loaded machine, t_runtimes.sh).  A few such events
   come between two that may wait, never hundreds. */
#define RING_RESERVE 256u

/* Reads the tail, wakes the writer, waits for room for n slots when the ring is full;
   returns 0 when there is none (the event is dropped, counted). */
static int make_room(churn_thread *t, uint64_t head, unsigned n, int may_wait)
{
    t->tail_seen = atomic_load_explicit(&t->tail, memory_order_acquire);
    uint64_t used = head - t->tail_seen;
    if (used >= CHURN_RING_EVENTS / 2)
        churn_writer_poke();
    uint64_t limit = CHURN_RING_EVENTS - (may_wait ? RING_RESERVE : 0);
    if (used + n > limit && may_wait && !wait_for_room(t, head + n))
        t->tail_seen = atomic_load_explicit(&t->tail, memory_order_acquire);
    used = head - t->tail_seen;
    /* (an event that could not wait after all takes the reserve, if it has room) */
    if (used + n > CHURN_RING_EVENTS) {
        atomic_fetch_add(&churn_dropped_events, 1);
        return 0;
    }
    t->tail_check = used < CHURN_RING_EVENTS / 2 ? t->tail_seen + CHURN_RING_EVENTS / 2
                                                 : head + WAKE_AGAIN;
    if (t->tail_check > t->tail_seen + CHURN_RING_EVENTS - RING_RESERVE)
        t->tail_check = t->tail_seen + CHURN_RING_EVENTS - RING_RESERVE;
    return 1;
}

/* The slow path of a push.  Kept out of line so that the common push is a leaf that saves
   no registers. */
__attribute__((noinline)) void churn_thread_push_slow(churn_thread *t, uint64_t head,
                                                     churn_event ev, uint64_t slack, int narrow,
                                                     int may_wait)
{
    if (make_room(t, head, narrow ? 1 : 2, may_wait))
        churn_thread_put(t, head, ev, slack, narrow);
}

__attribute__((noinline)) int churn_thread_room_slow(churn_thread *t, uint64_t head)
{
    return make_room(t, head, 2, 1);
}

static int thread_dead(pid_t tid)
{
    return syscall(SYS_tgkill, getpid(), tid, 0) == -1 && errno == ESRCH;
}

/* Writer side.  Only the writer unlinks, and producers only push at the head, so walking the
   links needs no lock; unlinking takes it briefly, when it is free: the final pass may run on
   a thread interrupted while it held it (registering its ring), and a ring not recycled now
   is recycled at a later pass. */
void churn_threads_each(void (*fn)(churn_thread *t, void *ctx), void *ctx)
{
    churn_thread *t = atomic_load_explicit(&registry, memory_order_acquire);
    while (t) {
        churn_thread *next = t->next;
        int dead = atomic_load_explicit(&t->exited, memory_order_acquire) && thread_dead(t->tid);
        fn(t, ctx);
        if (dead && atomic_load(&t->head) == atomic_load(&t->tail) &&
            !atomic_exchange_explicit(&registry_lock.held, 1, memory_order_acquire)) {
            churn_thread **link = (churn_thread **)&registry;
            while (*link && *link != t)
                link = &(*link)->next;
            if (*link)
                *link = t->next;
            t->next = free_rings;
            free_rings = t;
            churn_spin_unlock(&registry_lock);
        }
        t = next;
    }
}

void churn_threads_lock(void) { churn_spin_lock(&registry_lock); }
void churn_threads_unlock(void) { churn_spin_unlock(&registry_lock); }

/* In a forked child only the forking thread exists.  Its ring's unconsumed events happened in
   the parent, whose trace gets them; every other ring belongs to a parent thread. */
void churn_threads_after_fork_child(void)
{
    churn_thread *t = atomic_load(&registry);
    while (t) {
        churn_thread *next = t->next;
        if (t != self) {
            t->next = free_rings;
            free_rings = t;
        }
        t = next;
    }
    unfinished = NULL; /* a ring like the others: its events happened in the parent */
    if (self) {
        self->next = NULL;
        self->tid = churn_gettid();
        atomic_store(&self->tail, atomic_load(&self->head));
        self->tail_seen = atomic_load(&self->head);
        self->tail_check = self->tail_seen + CHURN_RING_EVENTS / 2;
    }
    atomic_store(&registry, self);
    churn_spin_unlock(&registry_lock);
}

/* Threads get their ring when they start, before their first allocation: registering calls
   libc functions that allocate (pthread_getattr_np), which must not happen from inside an
   allocator hook (way_tcmalloc.c) or a patched allocator entry.  A thread made some other way
   (a raw clone) still registers lazily on its first event. */
typedef struct {
    void *(*fn)(void *);
    void *arg;
} start_t;

static void *thread_start(void *p)
{
    start_t s = *(start_t *)p;
    churn_mem_free(p);
    if (atomic_load(&churn_state) == CHURN_ON) {
        churn_in_shim++;
        churn_thread_self();
        churn_in_shim--;
    }
    return s.fn(s.arg);
}

CHURN_API int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                             void *(*fn)(void *), void *arg)
{
    static int (*_Atomic next)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!next)
        next = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
            RTLD_NEXT, "pthread_create");
    if (churn_in_shim || atomic_load(&churn_state) != CHURN_ON)
        return next(thread, attr, fn, arg);
    start_t *s = churn_mem_alloc(sizeof *s);
    if (!s)
        return next(thread, attr, fn, arg);
    s->fn = fn;
    s->arg = arg;
    int rc = next(thread, attr, thread_start, s);
    if (rc)
        churn_mem_free(s);
    return rc;
}
