/*
 * The stack table: every distinct stack once, under a dense id (1, 2, ...; 0 means none).
 *
 * Lookups take no lock: a slot's hash is published with a release store after its id, and a
 * grown table replaces the old one without freeing it (readers may still be probing the old
 * one; the waste is bounded by the geometric series).  Inserts, which happen once per
 * distinct stack, take one spinlock.  Frames live in an append-only arena that is never
 * moved, so the writer can read a stack by id at any time.
 */
#include <string.h>

#include "walk/cfi.h"
#include "shim.h"

typedef struct {
    _Atomic uint64_t hash;  /* 0 = empty */
    uint32_t id;
} slot_t;

typedef struct {
    size_t mask;
    slot_t slots[];
} table_t;

typedef struct {
    const uintptr_t *ips;
    uint32_t depth;
    uint32_t generation;    /* modules known when the stack was first seen */
} entry_t;

#define CHUNK_ENTRIES 4096u
#define MAX_CHUNKS 4096u   /* 16 M distinct stacks */
#define ARENA_CHUNK (4u << 20)

static _Atomic(table_t *) table;
static entry_t *_Atomic chunks[MAX_CHUNKS];
static _Atomic uint32_t count;        /* ids 1..count are defined */
static churn_spinlock insert_lock;
static uintptr_t *arena_cur, *arena_end;

static table_t *table_new(size_t slots)
{
    table_t *t = churn_os_map(sizeof(table_t) + slots * sizeof(slot_t));
    if (t)
        t->mask = slots - 1;
    return t;
}

void churn_stacks_init(void)
{
    if (!atomic_load(&table))
        atomic_store(&table, table_new(1u << 14));
}

/* Chained from the outermost frame inwards (cfi.h), so that a walk reusing the previous
   walk's outer frames reuses their part of the hash too. */
uint64_t churn_stack_hash_chained(uint64_t chain, unsigned depth)
{
    uint64_t h = (chain ^ depth) * 0xc4ceb9fe1a85ec53u;
    h ^= h >> 29;
    return h ? h : 1;
}

uint64_t churn_stack_hash(const uintptr_t *ips, unsigned depth)
{
    uint64_t chain = CHURN_CHAIN_SEED;
    for (unsigned i = depth; i-- > 0;)
        chain = churn_chain_step(chain, ips[i]);
    return churn_stack_hash_chained(chain, depth);
}

static entry_t *entry_of(uint32_t id)
{
    uint32_t i = id - 1;
    entry_t *c = atomic_load_explicit(&chunks[i / CHUNK_ENTRIES], memory_order_acquire);
    return c ? &c[i % CHUNK_ENTRIES] : NULL;
}

static int same(const entry_t *e, const uintptr_t *ips, unsigned depth)
{
    return e->depth == depth && !memcmp(e->ips, ips, depth * sizeof *ips);
}

static uint32_t lookup(table_t *t, const uintptr_t *ips, unsigned depth, uint64_t hash)
{
    for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
        uint64_t h = atomic_load_explicit(&t->slots[i].hash, memory_order_acquire);
        if (!h)
            return 0;
        if (h == hash && same(entry_of(t->slots[i].id), ips, depth))
            return t->slots[i].id;
    }
}

static void place(table_t *t, uint64_t hash, uint32_t id)
{
    size_t i = hash & t->mask;
    while (atomic_load_explicit(&t->slots[i].hash, memory_order_relaxed))
        i = (i + 1) & t->mask;
    t->slots[i].id = id;
    atomic_store_explicit(&t->slots[i].hash, hash, memory_order_release);
}

static uintptr_t *arena_take(unsigned n)
{
    if (!arena_cur || arena_cur + n > arena_end) {
        arena_cur = churn_os_map(ARENA_CHUNK);
        if (!arena_cur)
            return NULL;
        arena_end = arena_cur + ARENA_CHUNK / sizeof(uintptr_t);
    }
    uintptr_t *p = arena_cur;
    arena_cur += n;
    return p;
}

/* Doubles the table at half load; old tables stay mapped for readers still inside them. */
static table_t *grow_if_needed(table_t *t, uint32_t n)
{
    if ((size_t)n * 2 < t->mask + 1)
        return t;
    table_t *bigger = table_new((t->mask + 1) * 2);
    if (!bigger)
        return t;
    for (size_t i = 0; i <= t->mask; i++) {
        uint64_t h = atomic_load_explicit(&t->slots[i].hash, memory_order_relaxed);
        if (h)
            place(bigger, h, t->slots[i].id);
    }
    atomic_store_explicit(&table, bigger, memory_order_release);
    return bigger;
}

uint32_t churn_stack_intern(const uintptr_t *ips, unsigned depth, uint64_t hash)
{
    table_t *t = atomic_load_explicit(&table, memory_order_acquire);
    if (CHURN_UNLIKELY(!t))
        return 0; /* libchurn's memory ran out at start-up */
    uint32_t id = lookup(t, ips, depth, hash);
    if (id)
        return id;
    churn_spin_lock(&insert_lock);
    t = atomic_load_explicit(&table, memory_order_relaxed);
    id = lookup(t, ips, depth, hash);
    if (!id) {
        uint32_t n = atomic_load_explicit(&count, memory_order_relaxed);
        uint32_t chunk = n / CHUNK_ENTRIES;
        /* A table that could not grow is never filled: a probe needs an empty slot to end. */
        t = grow_if_needed(t, n + 1);
        int fits = (size_t)(n + 1) * 4 <= (t->mask + 1) * 3;
        uintptr_t *copy = fits ? arena_take(depth ? depth : 1) : NULL;
        if (chunk < MAX_CHUNKS && copy) {
            if (!atomic_load_explicit(&chunks[chunk], memory_order_relaxed))
                atomic_store_explicit(&chunks[chunk],
                                      churn_os_map(CHUNK_ENTRIES * sizeof(entry_t)),
                                      memory_order_release);
            entry_t *c = atomic_load_explicit(&chunks[chunk], memory_order_relaxed);
            if (c) {
                memcpy(copy, ips, depth * sizeof *ips);
                c[n % CHUNK_ENTRIES] =
                    (entry_t){copy, depth, (uint32_t)churn_modules_count()};
                id = n + 1;
                atomic_store_explicit(&count, id, memory_order_release);
                place(t, hash, id);
            }
        }
    }
    churn_spin_unlock(&insert_lock);
    return id; /* 0 when libchurn's own memory ran out: the event keeps "no stack" */
}

const uintptr_t *churn_stack_get(uint32_t id, unsigned *depth)
{
    if (!id || id > atomic_load_explicit(&count, memory_order_acquire))
        return NULL;
    entry_t *e = entry_of(id);
    *depth = e->depth;
    return e->ips;
}

uint32_t churn_stack_generation(uint32_t id)
{
    if (!id || id > atomic_load_explicit(&count, memory_order_acquire))
        return 0;
    return entry_of(id)->generation;
}

void churn_stacks_lock(void) { churn_spin_lock(&insert_lock); }
void churn_stacks_unlock(void) { churn_spin_unlock(&insert_lock); }
