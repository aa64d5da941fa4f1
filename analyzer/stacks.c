#include "stacks.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "util.h"

static churn_stack_slot *find_slot(churn_stack_slot *slots, size_t mask, uint64_t id)
{
    size_t i = churn_hash64(id) & mask;
    while (slots[i].id && slots[i].id != id)
        i = (i + 1) & mask;
    return &slots[i];
}

static void grow(churn_stacks *t)
{
    size_t n = t->slots ? (t->mask + 1) * 2 : 1024;
    churn_stack_slot *slots = churn_xcalloc(n, sizeof *slots);
    for (size_t i = 0; t->slots && i <= t->mask; i++)
        if (t->slots[i].id)
            *find_slot(slots, n - 1, t->slots[i].id) = t->slots[i];
    free(t->slots);
    t->slots = slots;
    t->mask = n - 1;
}

int churn_stacks_define(churn_stacks *t, uint64_t id, const uint64_t *ips, size_t depth,
                        uint64_t generation)
{
    if (!t->slots || (t->used + 1) * 4 > (t->mask + 1) * 3)
        grow(t);
    churn_stack_slot *s = find_slot(t->slots, t->mask, id);
    if (s->id)
        return s->depth == depth &&
                       (!depth || memcmp(t->ips + s->first, ips, depth * sizeof *ips) == 0)
                   ? 0
                   : -1;
    churn_reserve(&t->ips, &t->ips_cap, t->nips + depth, sizeof *t->ips);
    if (depth)
        memcpy(t->ips + t->nips, ips, depth * sizeof *ips);
    *s = (churn_stack_slot){id, t->nips, depth, generation};
    t->nips += depth;
    t->used++;
    return 1;
}

const uint64_t *churn_stacks_get(const churn_stacks *t, uint64_t id, size_t *depth)
{
    *depth = 0;
    if (!t->slots || !id)
        return NULL;
    const churn_stack_slot *s = find_slot(t->slots, t->mask, id);
    if (!s->id)
        return NULL;
    static const uint64_t no_frames[1];
    *depth = s->depth;
    return s->depth ? t->ips + s->first : no_frames;
}

uint64_t churn_stacks_generation(const churn_stacks *t, uint64_t id)
{
    if (!t->slots || !id)
        return UINT64_MAX;
    const churn_stack_slot *s = find_slot(t->slots, t->mask, id);
    return s->id ? s->generation : UINT64_MAX;
}

void churn_stacks_free(churn_stacks *t)
{
    free(t->slots);
    free(t->ips);
    *t = (churn_stacks){0};
}
