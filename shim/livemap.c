/*
 * The live map: address -> (requested size, slack, stack, epoch) of every traced object, so a
 * free can say what it frees (its size, its usable size, its callsite, its age) without the
 * analyzer having seen the allocation and without asking the allocator again, and so the
 * per-callsite live figures are exact.
 *
 * 256 shards by address hash, each an open-addressing table with linear probing and
 * backward-shift deletion (no tombstones), behind its own spinlock: two threads collide on a
 * lock only when their addresses hash to the same shard.  A shard removes an entry before the
 * real free runs and inserts after the real malloc returned, so address reuse between threads
 * is always seen in the right order, and the number each operation takes under the lock
 * (shim.h) hands that order on to the writer.
 *
 * Most objects die young, and a big map makes every probe a miss to memory (workerd: 24 MiB
 * of slots, one miss a free).  So each shard has a nursery in front of its table: a small
 * direct-mapped array under the same lock, where an object stays until it is freed or a
 * younger one takes its slot and moves it to the table.  An allocation only writes its
 * nursery slot; it does not look in the table.
 *
 * An address allocated again when libchurn never saw its free (the free came by a path no
 * way in covers, or its event was dropped) may so have an older entry in the table and a
 * newer one in the nursery.  A free finds the newer one first, as it looks in the nursery
 * first; the newer one replaces the older when it moves to the table; and a later free of
 * the address that finds no newer entry is given the older one, the object libchurn last
 * knew there.  Looking for the older entry at every allocation instead cost workerd's
 * thread a random read of the 24 MiB table per allocation: 8 to 10 % of its time.
 */
#include <string.h>

#include "shim.h"

/* 24 bytes, so that a probe touches as few cache lines as it can: the size and the slack
   share a word while both are small (nearly always), else the word is the size alone and
   the slack is asked of the allocator at the free. */
typedef struct {
    uintptr_t addr;   /* 0 = empty */
    uint64_t size;    /* PACKED | slack << 48 | size, or the size alone */
    uint32_t stack;
    uint32_t epoch;
} entry_t;

#define PACKED (1ull << 63)
#define SIZE_BITS 48
#define SLACK_MAX 0x7fffu

static inline void pack(entry_t *e, uintptr_t addr, uint64_t size, uint64_t slack,
                        uint32_t stack, uint32_t epoch)
{
    e->addr = addr;
    e->size = size >> SIZE_BITS == 0 && slack <= SLACK_MAX ? PACKED | slack << SIZE_BITS | size
                                                           : size;
    e->stack = stack;
    e->epoch = epoch;
}

static inline void unpack(const entry_t *e, churn_live *v)
{
    int packed = (e->size & PACKED) != 0;
    v->size = packed ? e->size & ((1ull << SIZE_BITS) - 1) : e->size;
    v->slack = packed ? (e->size & ~PACKED) >> SIZE_BITS : CHURN_SLACK_UNKNOWN;
    v->stack = e->stack;
    v->epoch = e->epoch;
}

#define NURSERY_LOG 7
#define NURSERY (1u << NURSERY_LOG)

struct churn_shard {
    churn_spinlock lock;
    uint32_t seq;     /* the next operation's number (shim.h, "the order of events") */
    uint32_t used;    /* entries in the table */
    size_t mask;      /* capacity - 1, capacity a power of two (0 before the first insert) */
    entry_t *slots;
    /* addr 0 = empty; aligned, so the header above has a line of its own (no false sharing
       of one shard's lock with another's entries) and entries straddle as few lines as can */
    _Alignas(64) entry_t nursery[NURSERY];
};
typedef struct churn_shard shard_t;

#define SHARDS CHURN_LIVEMAP_SHARDS
#define FIRST_CAPACITY 64u

static shard_t shards[SHARDS];

/* The shard comes from the address's 64 KiB region, the slot from a hash of the address.
   Objects allocated together share a shard, so a burst stays in one table (python3: ~10 %
   faster than spreading it over all 256); within the table, slots are scattered.  An earlier
   version also kept a region's addresses in consecutive slots: under workerd's tcmalloc a
   dense region became a run of thousands of slots that every other key hashing into it
   probed through, 47..76 probes a lookup instead of 2. */
static inline uint64_t mix(uintptr_t a)
{
    uint64_t region = ((uint64_t)a >> 16) * 0x9e3779b97f4a7c15u;
    uint64_t h = ((uint64_t)a >> 4) * 0xd6e8feb86659fd93u;
    return (region & 0xff00000000000000u) | ((h ^ (h >> 32)) & 0x00ffffffffffffffu);
}

static inline shard_t *shard_of(uint64_t h)
{
    return &shards[h >> 56];
}

unsigned churn_livemap_shard(uintptr_t addr)
{
    return (unsigned)(mix(addr) >> 56);
}

/* Bits of the hash that neither the shard nor (for tables under 2^40 slots) the slot uses. */
static inline entry_t *nursery_of(shard_t *s, uint64_t h)
{
    return &s->nursery[(h >> 40) & (NURSERY - 1)];
}

static void put(entry_t *slots, size_t mask, const entry_t *e)
{
    size_t i = mix(e->addr) & mask;
    while (slots[i].addr && slots[i].addr != e->addr)
        i = (i + 1) & mask;
    slots[i] = *e;
}

/* Out of line: inlined, its mapping call made the insert save and restore every register. */
static __attribute__((noinline, cold)) int grow(shard_t *s)
{
    size_t cap = s->slots ? (s->mask + 1) * 2 : FIRST_CAPACITY;
    size_t bytes = cap * sizeof(entry_t);
    entry_t *bigger = churn_os_map(bytes);
    if (!bigger)
        return -1;
    /* Written first, each page is faulted in writable.  Probed first, it was mapped to the
       zero page and then copied on the first write, a second fault whose TLB flush
       interrupts the writer's core: 0.9 % of workerd's main thread, whose live set grows. */
    for (size_t off = 0; off < bytes; off += 4096)
        ((volatile char *)bigger)[off] = 0;
    if (s->slots) {
        for (size_t i = 0; i <= s->mask; i++)
            if (s->slots[i].addr)
                put(bigger, cap - 1, &s->slots[i]);
        churn_os_unmap(s->slots, (s->mask + 1) * sizeof(entry_t));
    }
    s->slots = bigger;
    s->mask = cap - 1;
    return 0;
}

/* The object an allocation will move from the nursery to the table, if any, lands in a slot
   that is a cache miss in a big map (workerd: 24 MiB of slots); asked for before the stack
   walk, it arrives while the walk runs.  Read without the lock: a stale table only
   prefetches a line that is not used. */
void churn_livemap_prefetch(uintptr_t addr)
{
    uint64_t h = mix(addr);
    const shard_t *s = shard_of(h);
    const entry_t *slots = __atomic_load_n(&s->slots, __ATOMIC_RELAXED);
    size_t mask = __atomic_load_n(&s->mask, __ATOMIC_RELAXED);
    uintptr_t evicted = __atomic_load_n(&nursery_of((shard_t *)s, h)->addr, __ATOMIC_RELAXED);
    if (slots && evicted && evicted != addr)
        __builtin_prefetch(&slots[mix(evicted) & mask], 1); /* never faults, even on an old table */
}

/* The table's entry for addr, or NULL; the caller holds the lock. */
static entry_t *table_find(shard_t *s, uintptr_t addr, uint64_t h)
{
    if (!s->slots)
        return NULL;
    for (size_t i = h & s->mask;; i = (i + 1) & s->mask) {
        if (s->slots[i].addr == addr)
            return &s->slots[i];
        if (!s->slots[i].addr)
            return NULL;
    }
}

/* Backward-shift deletion: later members of the probe run move into the hole. */
static void table_erase(shard_t *s, entry_t *e)
{
    size_t mask = s->mask, hole = (size_t)(e - s->slots);
    for (size_t j = (hole + 1) & mask; s->slots[j].addr; j = (j + 1) & mask) {
        size_t home = mix(s->slots[j].addr) & mask;
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            s->slots[hole] = s->slots[j];
            hole = j;
        }
    }
    s->slots[hole].addr = 0;
    s->used--;
}

/* Into the table, over an older entry of the same address (it lies on the way to the first
   empty slot, as linear probing keeps an address within the run from its home slot); lost
   when libchurn's memory runs out, and that object's free is then counted as unknown. */
static void table_put(shard_t *s, const entry_t *e)
{
    /* Keep the load under 3/4; the grow (a fresh mapping) is amortised over the shard. */
    if ((!s->slots || (size_t)(s->used + 1) * 4 > (s->mask + 1) * 3) && grow(s))
        return;
    size_t i = mix(e->addr) & s->mask;
    while (s->slots[i].addr && s->slots[i].addr != e->addr)
        i = (i + 1) & s->mask;
    s->used += s->slots[i].addr == 0;
    s->slots[i] = *e;
}

static inline uint32_t epoch_now(void)
{
    return (uint32_t)atomic_load_explicit(&churn_epoch_now, memory_order_relaxed);
}

static inline void insert(shard_t *s, uint64_t h, const entry_t *e)
{
    entry_t *n = nursery_of(s, h);
    if (n->addr && n->addr != e->addr)
        table_put(s, n);
    *n = *e;
}

churn_shard_op churn_livemap_insert_locked(uintptr_t addr, uint64_t size, uint64_t slack,
                                           uint32_t stack, int numbered)
{
    uint64_t h = mix(addr);
    shard_t *s = shard_of(h);
    churn_spin_lock(&s->lock);
    churn_shard_op op = {s, epoch_now(), 0};
    if (numbered)
        op.seq = s->seq++;
    entry_t e;
    pack(&e, addr, size, slack, stack, op.epoch);
    insert(s, h, &e);
    return op;
}

void churn_livemap_insert(uintptr_t addr, uint64_t size, uint64_t slack, uint32_t stack,
                          uint32_t epoch)
{
    uint64_t h = mix(addr);
    shard_t *s = shard_of(h);
    entry_t e;
    pack(&e, addr, size, slack, stack, epoch);
    churn_spin_lock(&s->lock);
    insert(s, h, &e);
    churn_spin_unlock(&s->lock);
}

churn_shard_op churn_livemap_remove_locked(uintptr_t addr, churn_live *out, int *found,
                                           int numbered)
{
    uint64_t h = mix(addr);
    shard_t *s = shard_of(h);
    churn_spin_lock(&s->lock);
    churn_shard_op op = {s, epoch_now(), 0};
    if (numbered)
        op.seq = s->seq++;
    entry_t *n = nursery_of(s, h);
    if (n->addr == addr) {
        unpack(n, out);
        n->addr = 0;
        *found = 1;
        return op;
    }
    entry_t *e = table_find(s, addr, h);
    if (e) {
        unpack(e, out);
        table_erase(s, e);
    }
    *found = e != NULL;
    return op;
}

void churn_livemap_unlock(churn_shard *s)
{
    churn_spin_unlock(&s->lock);
}

int churn_livemap_remove(uintptr_t addr, churn_live *out)
{
    int found;
    churn_livemap_unlock(churn_livemap_remove_locked(addr, out, &found, 0).shard);
    return found;
}

void churn_livemap_seqs(uint32_t *next)
{
    for (unsigned i = 0; i < SHARDS; i++)
        next[i] = shards[i].seq;
}

void churn_livemap_lock_all(void)
{
    for (unsigned i = 0; i < SHARDS; i++)
        churn_spin_lock(&shards[i].lock);
}

void churn_livemap_unlock_all(void)
{
    for (unsigned i = 0; i < SHARDS; i++)
        churn_spin_unlock(&shards[i].lock);
}

void churn_livemap_each(void (*fn)(uintptr_t addr, const churn_live *v, void *ctx), void *ctx)
{
    for (unsigned k = 0; k < SHARDS; k++) {
        shard_t *s = &shards[k];
        for (size_t i = 0; i < NURSERY; i++)
            if (s->nursery[i].addr) {
                churn_live v;
                unpack(&s->nursery[i], &v);
                fn(s->nursery[i].addr, &v, ctx);
            }
        for (size_t i = 0; s->slots && i <= s->mask; i++)
            if (s->slots[i].addr) {
                churn_live v;
                unpack(&s->slots[i], &v);
                fn(s->slots[i].addr, &v, ctx);
            }
    }
}
