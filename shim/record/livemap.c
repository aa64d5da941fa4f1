/*
 * The live map: address -> (requested size, slack, stack, epoch) of every traced object, so a
 * free can say what it frees (its size, its usable size, its callsite, its age) without the
 * analyzer having seen the allocation and without asking the allocator again, and so the
 * per-callsite live figures are exact.
 *
 * It is the writer's: the program's threads only push their events, and the writer applies
 * them here in each address's order (order.c, writer.c), so no lock is taken and no probe is
 * made on the allocation path.  256 shards by the address's 64 KiB region (objects allocated
 * together share a shard's table), each an open-addressing table with linear probing and
 * backward-shift deletion (no tombstones).
 *
 * Most objects die young, and a big map makes every probe a miss to memory (workerd: 24 MiB
 * of slots, one miss a free).  So each shard has a nursery in front of its table: a small
 * direct-mapped array, where an object stays until it is freed or a younger one takes its
 * slot and moves it to the table.  An allocation only writes its nursery slot; it does not
 * look in the table.
 *
 * An address allocated again when libchurn never saw its free (the free came by a path no
 * way in covers, or its event was dropped) may so have an older entry in the table and a
 * newer one in the nursery.  A free finds the newer one first, as it looks in the nursery
 * first; the newer one replaces the older when it moves to the table; and a later free of
 * the address that finds no newer entry is given the older one, the object libchurn last
 * knew there.  Looking for the older entry at every allocation instead cost a random read of
 * the table per allocation.
 */
#include <string.h>

#include "shim.h"

/* 40 bytes: the slack whole, so a free never needs the allocator, and the encoder's note. */
typedef struct {
    uintptr_t addr;   /* 0 = empty */
    churn_live v;
} entry_t;

#define NURSERY_LOG 7
#define NURSERY (1u << NURSERY_LOG)

typedef struct {
    uint32_t used;    /* entries in the table */
    size_t mask;      /* capacity - 1, capacity a power of two (0 before the first insert) */
    entry_t *slots;
    _Alignas(64) entry_t nursery[NURSERY]; /* addr 0 = empty */
} shard_t;

#define SHARDS CHURN_LIVEMAP_SHARDS
#define FIRST_CAPACITY 64u

static shard_t shards[SHARDS];

/* The shards an object was ever put in.  The shards are 1 MiB of libchurn's .bss, a page or
   so each: a walk reads only those ever used, so that pages never written stay unmapped
   (reading one maps the zero page, which mincore, and so libchurn's own resident figure,
   counts while the kernel's RSS does not).  Apart from the shards, for the same reason. */
static uint64_t touched[(SHARDS + 63) / 64];

static inline int shard_touched(unsigned k)
{
    return touched[k / 64] >> (k % 64) & 1;
}

/* The shard is the address's region's (as order.c numbers it), the slot a hash of the
   address.  An earlier layout kept a region's addresses in consecutive slots: under
   workerd's tcmalloc a dense region became a run of thousands of slots that every other key
   hashing into it probed through, 47..76 probes a lookup instead of 2. */
static inline uint64_t mix(uintptr_t a)
{
    uint64_t h = ((uint64_t)a >> 4) * 0xd6e8feb86659fd93u;
    return h ^ (h >> 32);
}

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

static __attribute__((noinline, cold)) int grow(shard_t *s)
{
    size_t cap = s->slots ? (s->mask + 1) * 2 : FIRST_CAPACITY;
    size_t bytes = cap * sizeof(entry_t);
    entry_t *bigger = churn_os_map(bytes);
    if (!bigger)
        return -1;
    /* Written first, each page is faulted in writable; probed first, it was mapped to the
       zero page and then copied on the first write, a second fault. */
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

/* The table's entry for addr, or NULL. */
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

churn_live *churn_livemap_insert(unsigned k, uintptr_t addr, uint64_t size, uint64_t slack,
                                 uint32_t stack, uint32_t epoch)
{
    shard_t *s = &shards[k];
    entry_t *n = nursery_of(s, mix(addr));
    if (n->addr && n->addr != addr)
        table_put(s, n);
    *n = (entry_t){addr, {size, slack, stack, epoch, 0, 0}};
    touched[k / 64] |= (uint64_t)1 << (k % 64);
    return &n->v;
}

static inline void unpack(const entry_t *e, churn_live *v)
{
    *v = e->v;
}

int churn_livemap_remove(unsigned k, uintptr_t addr, churn_live *out)
{
    uint64_t h = mix(addr);
    shard_t *s = &shards[k];
    entry_t *n = nursery_of(s, h);
    if (n->addr == addr) {
        unpack(n, out);
        n->addr = 0;
        return 1;
    }
    entry_t *e = table_find(s, addr, h);
    if (!e)
        return 0;
    unpack(e, out);
    table_erase(s, e);
    return 1;
}

void churn_livemap_each(void (*fn)(uintptr_t addr, const churn_live *v, void *ctx), void *ctx)
{
    for (unsigned k = 0; k < SHARDS; k++) {
        if (!shard_touched(k))
            continue;
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

void churn_livemap_clear(void)
{
    for (unsigned k = 0; k < SHARDS; k++) {
        if (!shard_touched(k))
            continue;
        shard_t *s = &shards[k];
        if (s->slots)
            churn_os_unmap(s->slots, (s->mask + 1) * sizeof(entry_t));
        s->slots = NULL;
        s->mask = 0;
        s->used = 0;
        memset(s->nursery, 0, sizeof s->nursery);
    }
    memset(touched, 0, sizeof touched);
}
