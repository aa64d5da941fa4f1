#include "heap/early.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/util.h"

#define FIRST_CAPACITY 1024u

void churn_early_init(churn_early *e)
{
    e->slots = churn_xcalloc(FIRST_CAPACITY, sizeof *e->slots);
    e->mask = FIRST_CAPACITY - 1;
    e->count = 0;
}

void churn_early_free(churn_early *e)
{
    free(e->slots);
    e->slots = NULL;
}

/* The first empty slot of addr's probe run: where it goes after those already there.
   Backward-shift deletion keeps the entries of one home in the order they came, so the
   first match in probe order is the oldest. */
static size_t empty_slot(const churn_early *e, uint64_t addr)
{
    size_t i = churn_hash64(addr) & e->mask;
    while (e->slots[i].addr)
        i = (i + 1) & e->mask;
    return i;
}

/* Kept under half full, so that a miss (the common question) ends quickly. */
static void grow(churn_early *e)
{
    churn_early bigger = {churn_xcalloc((e->mask + 1) * 2, sizeof *e->slots), e->mask * 2 + 1,
                          e->count};
    /* Slot order from a run's start keeps each home's order, except for a run that wraps
       past the end: its wrapped part is moved first, ahead of the rest. */
    size_t start = 0;
    while (start <= e->mask && e->slots[start].addr)
        start++;
    for (size_t k = 0; k <= e->mask; k++) {
        size_t i = (start + k) & e->mask;
        if (e->slots[i].addr)
            bigger.slots[empty_slot(&bigger, e->slots[i].addr)] = e->slots[i];
    }
    free(e->slots);
    *e = bigger;
}

int churn_early_put(churn_early *e, const churn_object *freed)
{
    if ((e->count + 1) * 2 > e->mask + 1)
        grow(e);
    size_t i = churn_hash64(freed->addr) & e->mask, same = 0;
    for (; e->slots[i].addr; i = (i + 1) & e->mask)
        if (e->slots[i].addr == freed->addr && ++same == CHURN_EARLY_SAME_MAX)
            return 0;
    e->slots[i] = *freed;
    e->count++;
    return 1;
}

/* Backward-shift deletion: later members of the probe run move into the hole. */
static void take(churn_early *e, size_t hole)
{
    for (size_t j = (hole + 1) & e->mask; e->slots[j].addr; j = (j + 1) & e->mask) {
        size_t home = churn_hash64(e->slots[j].addr) & e->mask;
        if (((j - home) & e->mask) >= ((j - hole) & e->mask)) {
            e->slots[hole] = e->slots[j];
            hole = j;
        }
    }
    e->slots[hole].addr = 0;
    e->count--;
}

int churn_early_cancel(churn_early *e, const churn_object *o)
{
    for (size_t i = churn_hash64(o->addr) & e->mask; e->slots[i].addr; i = (i + 1) & e->mask) {
        const churn_object *w = &e->slots[i];
        if (w->addr == o->addr && w->size == o->size && w->stack == o->stack &&
            w->epoch == o->epoch) {
            take(e, i);
            return 1;
        }
    }
    return 0;
}

void churn_early_drain(churn_early *e, void (*fn)(void *ctx, const churn_object *o), void *ctx)
{
    for (size_t i = 0; i <= e->mask; i++)
        if (e->slots[i].addr) {
            fn(ctx, &e->slots[i]);
            e->slots[i].addr = 0;
        }
    e->count = 0;
}
