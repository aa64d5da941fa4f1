/*
 * The writer's per-segment coding state: the allocation-info table (size, slack, stack ->
 * small index) and the segment's live map (address -> info, epoch) that lets a free of an
 * object allocated in the same segment be written as just an address code.
 *
 * Both tables are reset at every segment by bumping a generation instead of clearing memory;
 * a slot of an older generation counts as empty, which keeps linear probing and
 * backward-shift deletion correct without touching the whole table.
 *
 * The writer probes the live map for nearly every event, at addresses spread over the whole
 * table, so its size is what decides whether those probes hit the cache: slots are 24 bytes,
 * and a table is sized to what the previous segment used (it shrinks at a reset after a
 * segment that used a small part of it) rather than to the largest segment ever seen.
 *
 * Most objects die young, so the live map has a nursery in front of it: a small direct-mapped
 * array that stays in the cache, where an object lives until it is freed or until a younger
 * one needs its slot and moves it to the table.  A short-lived object never touches the table.
 */
#include <string.h>

#include "record/segstate.h"
#include "shim.h"

typedef struct {
    uint64_t key;     /* address, or info hash */
    uint32_t number;  /* the allocation's number in the segment (< 2^32: a segment's raw
                         bytes are) */
    uint32_t value;   /* info index */
    int32_t epoch;    /* the allocation's epoch, relative to the segment's first */
    uint32_t gen;
} slot_t;

typedef struct {
    slot_t *slots;
    size_t mask, used;
    size_t peak;      /* most slots used at once in this segment */
    int by_address;   /* keys are addresses: their 16-byte granule is hashed (see home) */
} table_t;

#define MIN_SLOTS 1024u

static table_t infos_by_key, live = {.by_address = 1};
static churn_seg_info *infos;
static size_t ninfos, infos_cap;
static uint32_t gen = 1;
static uint64_t base_epoch;

static inline uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdu;
    return k ^ (k >> 29);
}

static inline int occupied(const slot_t *s) { return s->gen == gen; }

/* Addresses are hashed whole (16-byte granules).  Giving a 64 KiB region consecutive slots
   (for cache locality) made, under workerd's tcmalloc, runs of thousands of slots that other
   keys probed through: the writer spent 46 % of its time in those probes. */
static inline size_t home(const table_t *t, uint64_t key)
{
    return (size_t)mix(t->by_address ? key >> 4 : key);
}

static __attribute__((noinline)) int grow(table_t *t)
{
    size_t cap = t->slots ? (t->mask + 1) * 2 : MIN_SLOTS;
    slot_t *bigger = churn_mem_alloc(cap * sizeof *bigger);
    if (!bigger)
        return -1;
    memset(bigger, 0, cap * sizeof *bigger);
    if (t->slots) {
        for (size_t i = 0; i <= t->mask; i++) {
            if (!occupied(&t->slots[i]))
                continue;
            size_t j = home(t, t->slots[i].key) & (cap - 1);
            while (occupied(&bigger[j]))
                j = (j + 1) & (cap - 1);
            bigger[j] = t->slots[i];
        }
        churn_mem_free(t->slots);
    }
    t->slots = bigger;
    t->mask = cap - 1;
    return 0;
}

/* The probes are inlined where they are used: the live map's, once an event, then cost no
   calls and know their table's hashing at compile time. */
#define PROBE static inline __attribute__((always_inline))

PROBE slot_t *find(table_t *t, uint64_t key)
{
    if (!t->slots)
        return NULL;
    for (size_t i = home(t, key) & t->mask;; i = (i + 1) & t->mask) {
        slot_t *s = &t->slots[i];
        if (!occupied(s))
            return NULL;
        if (s->key == key)
            return s;
    }
}

PROBE slot_t *insert(table_t *t, uint64_t key)
{
    if ((!t->slots || (t->used + 1) * 2 > t->mask + 1) && grow(t))
        return NULL;
    size_t i = home(t, key) & t->mask;
    while (occupied(&t->slots[i]) && t->slots[i].key != key)
        i = (i + 1) & t->mask;
    if (!occupied(&t->slots[i]) && ++t->used > t->peak)
        t->peak = t->used;
    t->slots[i].key = key;
    t->slots[i].gen = gen;
    return &t->slots[i];
}

PROBE void erase(table_t *t, slot_t *s)
{
    size_t mask = t->mask, hole = (size_t)(s - t->slots);
    for (size_t j = (hole + 1) & mask; occupied(&t->slots[j]); j = (j + 1) & mask) {
        size_t h = home(t, t->slots[j].key) & mask;
        if (((j - h) & mask) >= ((j - hole) & mask)) {
            t->slots[hole] = t->slots[j];
            hole = j;
        }
    }
    t->slots[hole].gen = 0;
    t->used--;
}

/* A table that the last segment used less than an eighth of starts the next one at twice
   that use (its load limit), so a burst (start-up) does not leave a table that misses the
   cache for the rest of the run.  Fresh slots are zeroed, generation 0: empty. */
static void reset(table_t *t)
{
    size_t cap = t->mask + 1, want = MIN_SLOTS;
    while (want < t->peak * 2)
        want *= 2;
    if (t->slots && cap >= want * 4) {
        slot_t *smaller = churn_mem_alloc(want * sizeof *smaller);
        if (smaller) {
            memset(smaller, 0, want * sizeof *smaller);
            churn_mem_free(t->slots);
            t->slots = smaller;
            t->mask = want - 1;
        }
    }
    t->used = t->peak = 0;
}

/* ---- the live map's nursery ---- */

/* 2048 slots of 24 bytes: 48 KiB, kept in L2 beside the writer's other hot data.  Larger
   sizes moved few more objects off the table on python3 and cost the cache what they won. */
#define NURSERY_LOG 11
#define NURSERY (1u << NURSERY_LOG)
static slot_t nursery[NURSERY];

/* Which table slots may hold an address: one bit per hash of the address, set when an entry
   goes into the table and cleared only at a reset.  A put or take whose bit is clear knows the
   table has no entry for it without probing the table (a miss to memory). */
#define MAYBE_LOG 20
static uint64_t maybe[(1u << MAYBE_LOG) / 64];

static inline slot_t *nursery_slot(uint64_t addr)
{
    return &nursery[(addr >> 4) * 0x9e3779b97f4a7c15u >> (64 - NURSERY_LOG)];
}

static inline uint64_t maybe_bit(uint64_t addr, uint64_t **word)
{
    uint64_t h = mix(addr >> 4) >> (64 - MAYBE_LOG);
    *word = &maybe[h / 64];
    return 1ull << (h % 64);
}

void churn_seg_reset(uint64_t first_epoch)
{
    gen++;
    memset(maybe, 0, sizeof maybe);
    reset(&infos_by_key);
    reset(&live);
    ninfos = 0;
    base_epoch = first_epoch;
}

static uint64_t info_key(uint64_t size, uint64_t slack, uint32_t stack)
{
    return mix(size * 0x9e3779b97f4a7c15u ^ mix(slack + ((uint64_t)stack << 32)));
}

/* Nearly every allocation repeats one of a few infos seen shortly before (a loop's sizes at
   one callsite): a direct-mapped cache answers those with one cheap hash and one compare,
   where the table costs two full mixes and a probe.  An entry of an older segment's
   generation is empty, like a table slot. */
#define RECENT_SLOTS 1024u

typedef struct {
    uint64_t size, slack;
    uint32_t stack, gen, index;
} recent_t;

static recent_t recent[RECENT_SLOTS];

static inline recent_t *recent_slot(uint64_t size, uint64_t slack, uint32_t stack)
{
    uint64_t h = (size + (slack << 20) + ((uint64_t)stack << 40)) * 0x9e3779b97f4a7c15u;
    return &recent[h >> 54];
}

static long info_lookup(uint64_t size, uint64_t slack, uint32_t stack, int *is_new)
{
    uint64_t key = info_key(size, slack, stack);
    *is_new = 0;
    /* Equal keys of different infos are told apart by probing on with a perturbed key. */
    for (;; key = mix(key + 1)) {
        slot_t *s = find(&infos_by_key, key);
        if (!s)
            break;
        const churn_seg_info *in = &infos[s->value];
        if (in->size == size && in->slack == slack && in->stack == stack)
            return s->value;
    }
    if (ninfos == infos_cap) {
        size_t cap = infos_cap ? infos_cap * 2 : 4096;
        churn_seg_info *bigger = churn_mem_realloc(infos, cap * sizeof *bigger);
        if (!bigger)
            return -1;
        infos = bigger;
        infos_cap = cap;
    }
    slot_t *s = insert(&infos_by_key, key);
    if (!s)
        return -1;
    s->value = (uint32_t)ninfos;
    infos[ninfos] = (churn_seg_info){size, slack, stack};
    *is_new = 1;
    return (long)ninfos++;
}

/* Out of line, so that a hit saves no registers. */
static __attribute__((noinline)) long info_miss(recent_t *r, uint64_t size, uint64_t slack,
                                                uint32_t stack, int *is_new)
{
    long index = info_lookup(size, slack, stack, is_new);
    if (index >= 0)
        *r = (recent_t){size, slack, stack, gen, (uint32_t)index};
    return index;
}

long churn_seg_info_index(uint64_t size, uint64_t slack, uint32_t stack, int *is_new)
{
    recent_t *r = recent_slot(size, slack, stack);
    if (r->gen == gen && r->size == size && r->slack == slack && r->stack == stack) {
        *is_new = 0;
        return r->index;
    }
    return info_miss(r, size, slack, stack, is_new);
}

const churn_seg_info *churn_seg_info_get(uint32_t index)
{
    return index < ninfos ? &infos[index] : NULL;
}

/* Into the table, with its bit set (nothing when the table has no memory to grow). */
static void table_put(const slot_t *e)
{
    slot_t *s = insert(&live, e->key);
    if (!s)
        return;
    s->number = e->number;
    s->value = e->value;
    s->epoch = e->epoch;
    uint64_t *word, bit = maybe_bit(e->key, &word);
    *word |= bit;
}

static void table_drop(uint64_t addr)
{
    uint64_t *word, bit = maybe_bit(addr, &word);
    if (!(*word & bit))
        return;
    slot_t *s = find(&live, addr);
    if (s)
        erase(&live, s);
}

/* An address's entry is in its nursery slot or in the table, never in both: a put drops the
   table's, and an entry leaves the nursery only to go into the table. */
void churn_seg_live_put(uint64_t addr, uint64_t number, uint32_t info, uint64_t epoch)
{
    int64_t rel = (int64_t)(epoch - base_epoch);
    table_drop(addr);
    slot_t *n = nursery_slot(addr);
    /* Out of memory, the table loses the evicted entry: that object's free describes itself. */
    if (occupied(n) && n->key != addr)
        table_put(n);
    /* An epoch too far from the segment's first is not kept: its free describes itself. */
    if (rel != (int32_t)rel || number > UINT32_MAX)
        n->gen = 0;
    else
        *n = (slot_t){addr, (uint32_t)number, info, (int32_t)rel, gen};
}

int churn_seg_live_take(uint64_t addr, uint64_t *number, uint32_t *info, uint64_t *epoch)
{
    slot_t *s = nursery_slot(addr);
    int in_nursery = occupied(s) && s->key == addr;
    if (!in_nursery) {
        uint64_t *word, bit = maybe_bit(addr, &word);
        if (!(*word & bit) || !(s = find(&live, addr)))
            return 0;
    }
    *number = s->number;
    *info = s->value;
    *epoch = base_epoch + (uint64_t)(int64_t)s->epoch;
    if (in_nursery)
        s->gen = 0;
    else
        erase(&live, s);
    return 1;
}
