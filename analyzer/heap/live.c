#include "heap/live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/util.h"

/* The slots are a mapping of their own, not malloc's: a rehash gives the old table's pages
   back as it goes (madvise), which a block of malloc's may not be asked to do. */
static churn_object *slots_map(size_t n)
{
    void *p = mmap(NULL, n * sizeof(churn_object), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "churn-analyze: out of memory (mapping %zu bytes for live objects)\n",
                n * sizeof(churn_object));
        exit(1);
    }
    return p;
}

static void slots_unmap(churn_object *slots, size_t n)
{
    if (slots)
        munmap(slots, n * sizeof *slots);
}

void churn_liveset_init(churn_liveset *l)
{
    memset(l, 0, sizeof *l);
    l->mask = 4095;
    l->shift = 64 - 12;
    l->slots = slots_map(l->mask + 1);
}

void churn_liveset_free(churn_liveset *l)
{
    slots_unmap(l->slots, l->mask + 1);
    l->slots = NULL;
}

static inline size_t home_of(const churn_liveset *l, uint64_t addr)
{
    return churn_liveset_home(l, addr);
}

static inline size_t probe(const churn_liveset *l, uint64_t addr)
{
    return churn_liveset_probe(l, addr);
}

/* Slots of the old table per step of a rehash: 1 MiB. */
#define REHASH_STEP (1u << 15)

/* Doubling: an object's home moves from about slot i to about 2i (the hash's top bits gain
   one), so the new table fills from its start as the old one is read from its start.  Each
   step gives the old pages it read back and faults in the new pages it is about to fill, so
   the two tables together never hold much more than the new one: the old table and a full
   new one side by side were the analyzer's peak (48 of 148 MiB on the 20,000-subrequest
   workerd trace). */
static void rehash(churn_liveset *l, size_t nslots)
{
    churn_object *old = l->slots;
    size_t old_n = l->mask + 1;
    l->slots = slots_map(nslots);
    l->mask = nslots - 1;
    l->shift--;
    uintptr_t page = 4096;
    for (size_t from = 0; from < old_n; from += REHASH_STEP) {
        size_t to = from + REHASH_STEP < old_n ? from + REHASH_STEP : old_n;
        /* a hint: failure only costs page faults */
        madvise(l->slots + 2 * from, (2 * (to - from)) * sizeof *l->slots, MADV_POPULATE_WRITE);
        for (size_t i = from; i < to; i++)
            if (old[i].addr)
                l->slots[probe(l, old[i].addr)] = old[i];
        uintptr_t a = (uintptr_t)(old + from), e = (uintptr_t)(old + to) & ~(page - 1);
        if (e > a)
            madvise((void *)a, e - a, MADV_DONTNEED);
    }
    slots_unmap(old, old_n);
}

/* Linear probing with backward-shift deletion: no tombstones, so a long trace of allocations
   and frees never degrades the table. */
static void delete_slot(churn_liveset *l, size_t i)
{
    size_t j = i;
    for (;;) {
        j = (j + 1) & l->mask;
        if (!l->slots[j].addr)
            break;
        size_t home = home_of(l, l->slots[j].addr);
        /* slot j may move to i only if its home is not cyclically in (i, j] */
        if (((j - home) & l->mask) >= ((j - i) & l->mask)) {
            l->slots[i] = l->slots[j];
            i = j;
        }
    }
    l->slots[i].addr = 0;
}

static void displace(churn_liveset *l, const churn_object *o)
{
    size_t idx;
    if (l->displaced_count == CHURN_DISPLACED_MAX) {
        idx = l->displaced_head;
        l->displaced_head = (l->displaced_head + 1) % CHURN_DISPLACED_MAX;
        l->displaced_evicted++;
        if (l->evicted)
            l->evicted(l->evicted_ctx, &l->displaced[idx]);
    } else {
        idx = (l->displaced_head + l->displaced_count++) % CHURN_DISPLACED_MAX;
    }
    l->displaced[idx] = *o;
}

void churn_liveset_insert(churn_liveset *l, const churn_object *o)
{
    uint64_t *known = churn_liveset_vacant(l, o->addr);
    if (*known == o->addr)
        *known = 0;
    if ((l->count + 1) * 8 > (l->mask + 1) * 5) {
        churn_need_memory((uint64_t)(l->mask + 1) * 2 * sizeof *l->slots, l->count,
                          "live objects");
        rehash(l, (l->mask + 1) * 2);
    }
    size_t i = probe(l, o->addr);
    if (l->slots[i].addr) {
        displace(l, &l->slots[i]);
        l->bytes -= l->slots[i].size;
        l->count--;
    }
    l->slots[i] = *o;
    l->count++;
    l->bytes += o->size;
}

void churn_liveset_displace_slot(churn_liveset *l, size_t i)
{
    displace(l, &l->slots[i]);
    l->bytes -= l->slots[i].size;
    l->count--;
    delete_slot(l, i);
}

static int same_object(const churn_object *a, const churn_object *b)
{
    return a->addr == b->addr && a->size == b->size && a->stack == b->stack &&
           a->epoch == b->epoch;
}

static int remove_displaced(churn_liveset *l, const churn_object *freed, churn_object *removed)
{
    for (size_t k = 0; k < l->displaced_count; k++) {
        size_t idx = (l->displaced_head + k) % CHURN_DISPLACED_MAX;
        if (!same_object(&l->displaced[idx], freed))
            continue;
        *removed = l->displaced[idx];
        size_t last = (l->displaced_head + l->displaced_count - 1) % CHURN_DISPLACED_MAX;
        l->displaced[idx] = l->displaced[last];
        l->displaced_count--;
        return 1;
    }
    return 0;
}

enum churn_free_match churn_liveset_remove(churn_liveset *l, const churn_object *freed,
                                           churn_object *removed)
{
    size_t i = probe(l, freed->addr);
    int live_here = l->slots[i].addr != 0;
    if (live_here && same_object(&l->slots[i], freed)) {
        *removed = l->slots[i];
    } else if (l->displaced_count && remove_displaced(l, freed, removed)) {
        return CHURN_FREE_DISPLACED;
    } else if (!live_here) {
        return CHURN_FREE_UNMATCHED;
    } else {
        *removed = l->slots[i];
    }
    l->count--;
    l->bytes -= removed->size;
    delete_slot(l, i);
    return same_object(removed, freed) ? CHURN_FREE_MATCHED : CHURN_FREE_MISMATCHED;
}

void churn_liveset_foreach(const churn_liveset *l, churn_object_fn fn, void *ctx)
{
    for (size_t i = 0; i <= l->mask; i++)
        if (l->slots[i].addr)
            fn(ctx, &l->slots[i]);
}
