/*
 * The writer's per-segment coding state: the allocation-info table (size, slack, stack ->
 * small index), reset at every segment by bumping a generation instead of clearing memory; a
 * slot of an older generation counts as empty, which keeps linear probing correct without
 * touching the whole table.  The generation also names the segment in the live map's entries
 * (livemap.c), so that a free finds there whether its allocation was written in the same
 * segment and may be named by its number: one probe of one map an event.
 */
#include <string.h>

#include "record/segstate.h"
#include "shim.h"

typedef struct {
    uint64_t key;   /* info hash */
    uint32_t value; /* info index */
    uint32_t gen;
} slot_t;

typedef struct {
    slot_t *slots;
    size_t mask, used;
    size_t peak; /* most slots used at once in this segment */
} table_t;

#define MIN_SLOTS 1024u
#define MIN_INFOS 4096u

static table_t infos_by_key;
static churn_seg_info *infos;
static size_t ninfos, infos_cap;
static uint32_t gen = 1;

static inline uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdu;
    return k ^ (k >> 29);
}

static inline int occupied(const slot_t *s) { return s->gen == gen; }

static inline size_t home(uint64_t key)
{
    return (size_t)mix(key);
}

static __attribute__((noinline)) int grow(table_t *t)
{
    size_t cap = t->slots ? (t->mask + 1) * 2 : MIN_SLOTS;
    slot_t *bigger = churn_mem_alloc(cap * sizeof *bigger); /* zeroed: generation 0, empty */
    if (!bigger)
        return -1;
    if (t->slots) {
        for (size_t i = 0; i <= t->mask; i++) {
            if (!occupied(&t->slots[i]))
                continue;
            size_t j = home(t->slots[i].key) & (cap - 1);
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

static slot_t *find(table_t *t, uint64_t key)
{
    if (!t->slots)
        return NULL;
    for (size_t i = home(key) & t->mask;; i = (i + 1) & t->mask) {
        slot_t *s = &t->slots[i];
        if (!occupied(s))
            return NULL;
        if (s->key == key)
            return s;
    }
}

static slot_t *insert(table_t *t, uint64_t key)
{
    if ((!t->slots || (t->used + 1) * 2 > t->mask + 1) && grow(t))
        return NULL;
    size_t i = home(key) & t->mask;
    while (occupied(&t->slots[i]) && t->slots[i].key != key)
        i = (i + 1) & t->mask;
    if (!occupied(&t->slots[i]) && ++t->used > t->peak)
        t->peak = t->used;
    t->slots[i].key = key;
    t->slots[i].gen = gen;
    return &t->slots[i];
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
        slot_t *smaller = churn_mem_alloc(want * sizeof *smaller); /* zeroed */
        if (smaller) {
            churn_mem_free(t->slots);
            t->slots = smaller;
            t->mask = want - 1;
        }
    }
    t->used = t->peak = 0;
}

void churn_seg_prime(void)
{
    if (!infos_by_key.slots)
        grow(&infos_by_key);
    if (!infos && (infos = churn_mem_alloc(MIN_INFOS * sizeof *infos)))
        infos_cap = MIN_INFOS;
}

void churn_seg_reset(void)
{
    gen++;
    reset(&infos_by_key);
    ninfos = 0;
}

uint32_t churn_seg_current(void)
{
    return gen;
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
        size_t cap = infos_cap ? infos_cap * 2 : MIN_INFOS;
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
