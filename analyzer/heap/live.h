/*
 * The address-keyed set of live heap objects.  Memory is proportional to the objects live at
 * one moment, never to the length of the trace.
 *
 * Threads drain their events separately, so a reused address can be allocated (thread B)
 * before the free of its previous occupant (thread A) appears.  The previous occupant then
 * moves to a small "displaced" table, where the late free finds it by its own fields.
 */
#ifndef CHURN_LIVE_H
#define CHURN_LIVE_H

#include <stddef.h>
#include <stdint.h>

typedef struct churn_object {
    uint64_t addr;   /* 0: empty slot (a null pointer is never a live object) */
    uint64_t size;   /* requested */
    uint32_t stack;  /* the decoder rejects stack ids above 32 bits */
    uint32_t slack;  /* usable - requested, saturated (only fragmentation estimates read it) */
    uint64_t epoch;  /* of the allocation */
} churn_object;

/* The slack field of an object (usable - requested), saturated to fit. */
static inline uint32_t churn_slack32(uint64_t slack)
{
    return slack > UINT32_MAX ? UINT32_MAX : (uint32_t)slack;
}

#define CHURN_DISPLACED_MAX 4096
#define CHURN_VACANT_CACHE 1024 /* addresses known to hold no live object, direct-mapped */

typedef struct churn_liveset {
    churn_object *slots;
    size_t mask;
    unsigned shift;  /* 64 - log2(slots): the hash is the product's top bits */
    size_t count;
    uint64_t bytes;
    churn_object displaced[CHURN_DISPLACED_MAX]; /* a ring, oldest evicted first */
    size_t displaced_head, displaced_count;
    uint64_t displaced_evicted;
    /* told of an object that leaves the set without a free (evicted from the displaced
       table), when set */
    void (*evicted)(void *ctx, const churn_object *o);
    void *evicted_ctx;
    /* An allocator hands the same few addresses out again and again, and most allocations
       are freed in the same chunk of operations, which only asks whether something else is
       live at the address (churn_liveset_vacate): the answer, no, is kept here until an
       insertion at that address, so the table is not probed for it again. */
    uint64_t vacant[CHURN_VACANT_CACHE];
} churn_liveset;

static inline uint64_t *churn_liveset_vacant(churn_liveset *l, uint64_t addr)
{
    return &l->vacant[(addr >> 4) & (CHURN_VACANT_CACHE - 1)];
}

enum churn_free_match {
    CHURN_FREE_MATCHED = 0,     /* the live object at that address */
    CHURN_FREE_DISPLACED = 1,   /* an object displaced by a reuse of its address */
    CHURN_FREE_MISMATCHED = 2,  /* an object was live there but its fields differ; removed */
    CHURN_FREE_UNMATCHED = 3,   /* nothing known at that address */
};

void churn_liveset_init(churn_liveset *l);
void churn_liveset_free(churn_liveset *l);

/* Adds o; an object already live at its address moves to the displaced table. */
void churn_liveset_insert(churn_liveset *l, const churn_object *o);

/* Where addr's probe starts: the objects of one 4 KiB page start at consecutive slots from a
   place hashed from the page (Fibonacci hashing: one multiply, every bit of the page number
   counts).  Objects allocated together are freed together, and then their slots share cache
   lines: node's analysis ran 7-9 % faster than with every address hashed apart. */
static inline size_t churn_liveset_home(const churn_liveset *l, uint64_t addr)
{
    return ((size_t)(((addr >> 12) * 0x9e3779b97f4a7c15u) >> l->shift) +
            (size_t)((addr >> 4) & 0xff)) & l->mask;
}

/* The slot of addr, or the empty slot where it would go. */
static inline size_t churn_liveset_probe(const churn_liveset *l, uint64_t addr)
{
    size_t i = churn_liveset_home(l, addr);
    while (l->slots[i].addr && l->slots[i].addr != addr)
        i = (i + 1) & l->mask;
    return i;
}

/* Moves the object in slot i to the displaced table. */
void churn_liveset_displace_slot(churn_liveset *l, size_t i);

/* What an allocation at addr that is freed again before anything else happens at addr
   leaves behind: an object live there moves to the displaced table.  Nearly always there is
   none, so that check is inline. */
static inline void churn_liveset_vacate(churn_liveset *l, uint64_t addr)
{
    uint64_t *known = churn_liveset_vacant(l, addr);
    if (*known == addr)
        return;
    size_t i = churn_liveset_probe(l, addr);
    if (l->slots[i].addr)
        churn_liveset_displace_slot(l, i);
    *known = addr;
}

/* Removes the object a free refers to; *removed gets it unless the result is UNMATCHED. */
enum churn_free_match churn_liveset_remove(churn_liveset *l, const churn_object *freed,
                                           churn_object *removed);

typedef void (*churn_object_fn)(void *ctx, const churn_object *o);
void churn_liveset_foreach(const churn_liveset *l, churn_object_fn fn, void *ctx);

#endif
