/*
 * The common tail of every way in: capture the stack, take the event's number in its
 * address's order (order.c) and append the event to the thread's ring.  That is all the
 * program's thread does: what a free frees (its size, slack, stack and age) the writer finds
 * in its live map (livemap.c).  Callers hold the re-entrancy guard, so whatever libunwind or
 * the allocator does underneath is not traced.
 */
#include "shim.h"

/* A per-thread direct-mapped cache in front of the shared stack table: most allocations
   repeat a recent stack, and the cache turns them into one compare. */
static uint32_t stack_id(churn_thread *t)
{
    uintptr_t *ips = t->ips;
    uint64_t key, hash;
    int partial;
    unsigned depth = churn_unwind(ips, churn_opt.stack_depth, &key, &partial);
    /* CPython's frames: the same native stack runs any Python code */
    const uintptr_t *py = NULL;
    uint64_t pyhash = 0;
    unsigned npy = churn_pyframes_on() ? churn_pyframes_read(&t->py_sites, &py, &pyhash) : 0;
    if (npy)
        key = (key ^ pyhash) * 0x9e3779b97f4a7c15ull;
    unsigned slot = (unsigned)(key ^ (key >> 17)) & (CHURN_STACK_CACHE - 1);
    if (t->cache_hash[slot] == key)
        return t->cache_id[slot];
    hash = key;
    if (partial)
        depth = churn_unwind_complete(ips, churn_opt.stack_depth, &hash);
    if (npy) {
        depth = churn_pyframes_merge(ips, depth, churn_opt.stack_depth, py, npy);
        hash = churn_stack_hash(ips, depth);
    }
    uint32_t id = churn_stack_intern(ips, depth, hash);
    if (id) {
        t->cache_hash[slot] = key;
        t->cache_id[slot] = id;
    }
    return id;
}

/* The stack id of an allocation: under CHURN_STACK_SAMPLE only one in N is walked, the others
   get stack 0 ("none"), which the analyzer leaves out of its callsites and scales the rest
   by N; every allocation is still traced and counted. */
static inline __attribute__((always_inline)) uint32_t alloc_stack_id(churn_thread *t)
{
    if (CHURN_LIKELY(churn_opt.stack_sample == 1))
        return stack_id(t);
    if (--t->sample_left)
        return 0;
    t->sample_left = churn_stack_sample_gap(t);
    return stack_id(t);
}

static inline uint32_t epoch_now(void)
{
    return (uint32_t)atomic_load_explicit(&churn_epoch_now, memory_order_relaxed);
}

/* The usable size (the allocator's slack) is only written with events; histograms count
   requested bytes, so without events the allocator is not asked. */
static size_t usable_size(void *p, size_t fallback)
{
    return churn_opt.events && churn_next.usable_size ? churn_next.usable_size(p) : fallback;
}

/* A thread without a ring (libchurn's memory ran out when it needed one) loses its events;
   the trace says how many. */
static int no_ring(churn_thread *t, void *p)
{
    if (CHURN_LIKELY(t != NULL) || !p)
        return !p;
    atomic_fetch_add(&churn_dropped_events, 1);
    return 1;
}

/* Inlined into each way in's record call, as are record_free and alloc_stack_id: a call, its
   prologue and its saved registers less on every event (bench/instructions.sh). */
static inline __attribute__((always_inline)) void record_alloc(void *p, size_t size,
                                                               size_t usable, int kind)
{
    churn_thread *t = churn_thread_self();
    if (no_ring(t, p))
        return;
    churn_event ev;
    ev.type = CHURN_EV_ALLOC;
    ev.kind = (uint8_t)kind;
    ev.addr = (uintptr_t)p;
    ev.size = size;
    ev.usable = usable;
    ev.aux = 0;
    ev.stack = alloc_stack_id(t);
    uint64_t head;
    if (!churn_thread_room(t, &head))
        return; /* dropped, counted: it takes no number */
    ev.epoch = epoch_now();
    ev.seq = churn_order_take(ev.addr, &ev.epoch);
    churn_thread_push_at(t, head, ev);
}

/* Under CHURN_SAMPLE_BYTES only the sampled allocations, and the frees of sampled objects,
   go on from here (sample.c); the others are counted there. */
void churn_record_alloc(void *p, size_t size, int kind)
{
    if (p && (!churn_opt.sample_bytes || churn_sample_alloc(p, size)))
        record_alloc(p, size, usable_size(p, size), kind);
}

void *churn_record_alloc_let_go(void *p, size_t size, int kind)
{
    if (p && (!churn_opt.sample_bytes || churn_sample_alloc(p, size)))
        record_alloc(p, size, usable_size(p, size), kind);
    churn_guard_let_go();
    return p;
}

/* usable ASK_USABLE: the allocator is asked, once the allocation is known to be recorded. */
#define ASK_USABLE SIZE_MAX
void churn_record_alloc_usable(void *p, size_t size, size_t usable, int kind)
{
    if (!churn_opt.sample_bytes || (p && churn_sample_alloc(p, size)))
        record_alloc(p, size, usable == ASK_USABLE ? usable_size(p, size) : usable, kind);
}

/* A free as the program's thread pushes it: the writer fills in the rest.  usable: the
   allocator's word for it (an allocator hook's), or FROM_MAP for the one the allocation had,
   which the writer's live map keeps. */
#define FROM_MAP 0
static churn_event free_event(void *p, int kind, size_t usable, uint32_t epoch, uint32_t seq)
{
    churn_event ev;
    ev.type = CHURN_EV_FREE;
    ev.kind = (uint8_t)kind;
    ev.addr = (uintptr_t)p;
    ev.size = 0;
    ev.usable = usable;
    ev.aux = 0;
    ev.stack = 0;
    ev.epoch = epoch;
    ev.seq = seq;
    return ev;
}

static inline __attribute__((always_inline)) void record_free(void *p, int kind, size_t usable)
{
    churn_thread *t = churn_thread_self();
    uint64_t head;
    if (no_ring(t, p) || !churn_thread_room(t, &head))
        return;
    uint32_t epoch = epoch_now();
    uint32_t seq = churn_order_take((uintptr_t)p, &epoch);
    churn_thread_push_at(t, head, free_event(p, kind, usable, epoch, seq));
}

void churn_record_free(void *p, int kind)
{
    if (!churn_opt.sample_bytes || (p && churn_sample_free(p)))
        record_free(p, kind, FROM_MAP);
}

void churn_record_free_let_go(void *p, int kind)
{
    if (!churn_opt.sample_bytes || churn_sample_free(p))
        record_free(p, kind, FROM_MAP);
    churn_next.free(p);
    churn_guard_let_go();
}

void churn_record_free_usable(void *p, size_t usable, int kind)
{
    if (!churn_opt.sample_bytes || (p && churn_sample_free(p)))
        record_free(p, kind, usable);
}

/* The old block's place in its address's order is taken before the real realloc can free it
   (another thread may get its address at once).  Its event can only be pushed once the
   realloc has answered: the writer waits for it there (writer.c), and a failed realloc hands
   its number back as a SKIP. */
int churn_realloc_begin(void *p, churn_realloc_old *o)
{
    if (!p)
        return 0;
    /* an unsampled block (CHURN_SAMPLE_BYTES) is only counted, by churn_realloc_end */
    o->recorded = !churn_opt.sample_bytes || churn_sample_take(p);
    if (!o->recorded)
        return 1;
    o->t = churn_thread_self();
    if (!o->t)
        return 0;
    o->epoch = epoch_now();
    o->seq = churn_order_take((uintptr_t)p, &o->epoch);
    return 1;
}

void churn_realloc_end(void *p, const churn_realloc_old *o, void *q, size_t size, size_t usable,
                       int freed_on_failure)
{
    int failed = !q && size && !freed_on_failure;
    if (churn_opt.sample_bytes) {
        if (!failed)
            churn_sample_count_free();
        else if (o->recorded) /* back where it was: the set has room, p just left it */
            churn_sample_insert((uintptr_t)p);
        if (!o->recorded) {
            if (q)
                churn_record_alloc_usable(q, size, usable, CHURN_ALLOC_REALLOC);
            return;
        }
    }
    churn_event ev = free_event(p, CHURN_FREE_REALLOC, FROM_MAP, o->epoch, o->seq);
    if (failed) {
        ev.type = CHURN_EV_SKIP;
        churn_thread_push(o->t, ev, 1);
        return;
    }
    churn_thread_push(o->t, ev, 1);
    if (q)
        churn_record_alloc_usable(q, size, usable, CHURN_ALLOC_REALLOC);
}

void *churn_record_realloc(void *p, size_t size)
{
    churn_realloc_old o;
    if (!churn_realloc_begin(p, &o)) {
        void *q = churn_next.realloc(p, size);
        if (!p)
            churn_record_alloc(q, size, CHURN_ALLOC_REALLOC);
        return q;
    }
    void *q = churn_next.realloc(p, size);
    churn_realloc_end(p, &o, q, size,
                      !q ? 0 : churn_opt.sample_bytes ? ASK_USABLE : usable_size(q, size), 0);
    return q;
}

void churn_record_map(int kind, void *addr, size_t len, uint64_t a, void *b)
{
    int internal = (kind & CHURN_MAP_INTERNAL) != 0;
    churn_thread *t = internal ? churn_thread_inside_allocator() : churn_thread_self();
    if (!t) {
        atomic_fetch_add(&churn_dropped_events, 1);
        return;
    }
    churn_event ev;
    ev.type = CHURN_EV_MAP;
    ev.kind = (uint8_t)kind;
    ev.addr = (uintptr_t)addr;
    ev.size = len;
    ev.usable = a;
    ev.aux = (uintptr_t)b;
    /* Calls made inside the allocator (or libchurn) get no stack: unwinding there would
       re-enter the unwinder. */
    ev.stack = (kind & CHURN_MAP_INTERNAL) ? 0 : stack_id(t);
    ev.epoch = epoch_now();
    ev.seq = 0;
    /* An internal call may come from inside the allocator holding its locks, and the writer
       may need those locks for the allocator's counters: never wait for room there, unless
       the way in says the allocator holds none. */
    churn_thread_push(t, ev, !(kind & CHURN_MAP_INTERNAL) || churn_internal_may_wait);
}
