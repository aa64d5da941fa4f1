#include "read/stacks.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/util.h"

#define NO_REF SIZE_MAX

static size_t *find_slot(size_t *slots, size_t mask, const churn_stack_entry *entries,
                         uint64_t id)
{
    size_t i = churn_hash64(id) & mask;
    while (slots[i] && entries[slots[i] - 1].id != id)
        i = (i + 1) & mask;
    return &slots[i];
}

static const churn_stack_entry *find(const churn_stack_defs *t, uint64_t id)
{
    if (!t->slots || !id)
        return NULL;
    size_t at = *find_slot(t->slots, t->mask, t->entries, id);
    return at ? &t->entries[at - 1] : NULL;
}

static void grow(churn_stack_defs *t)
{
    size_t n = t->slots ? (t->mask + 1) * 2 : 1024;
    size_t *slots = churn_xcalloc(n, sizeof *slots);
    for (size_t i = 0; i < t->used; i++)
        *find_slot(slots, n - 1, t->entries, t->entries[i].id) = i + 1;
    free(t->slots);
    t->slots = slots;
    t->mask = n - 1;
}

/* The frames of e, innermost first: its own, then those of the entries it links to. */
static const uint64_t *expand(const churn_stack_defs *t, const churn_stack_entry *e)
{
    if (e->ref == NO_REF)
        return t->ips + e->first;
    uint64_t *out = t->expanded; /* sized for the deepest linked stack at its definition */
    size_t n = 0, from = 0;
    const churn_stack_entry *s = e;
    for (;;) {
        if (from < s->own) {
            memcpy(out + n, t->ips + s->first + from, (s->own - from) * sizeof *out);
            n += s->own - from;
            from = s->own;
        }
        if (n == e->depth || s->ref == NO_REF)
            break;
        const churn_stack_entry *r = &t->entries[s->ref];
        from = r->depth - (s->depth - from);
        s = r;
    }
    return out;
}

/* The entry whose own frames hold the first of ref's outermost `shared` ones, for a link. */
static size_t link_target(const churn_stack_defs *t, size_t ref, size_t shared)
{
    const churn_stack_entry *r = &t->entries[ref];
    while (r->ref != NO_REF && r->depth - shared >= r->own) {
        ref = r->ref;
        r = &t->entries[ref];
    }
    return ref;
}

int churn_stack_defs_define(churn_stack_defs *t, uint64_t id, const uint64_t *ips, size_t depth,
                            uint64_t generation, uint64_t ref, size_t shared)
{
    if (!t->slots || (t->used + 1) * 4 > (t->mask + 1) * 3)
        grow(t);
    size_t *slot = find_slot(t->slots, t->mask, t->entries, id);
    if (*slot) {
        const churn_stack_entry *e = &t->entries[*slot - 1];
        return e->depth == depth &&
                       (!depth || memcmp(expand(t, e), ips, depth * sizeof *ips) == 0)
                   ? 0
                   : -1;
    }
    size_t own = depth, link = NO_REF;
    const churn_stack_entry *r = ref && shared && shared <= depth ? find(t, ref) : NULL;
    if (r && shared <= r->depth &&
        memcmp(expand(t, r) + r->depth - shared, ips + depth - shared,
               shared * sizeof *ips) == 0) {
        own = depth - shared;
        link = link_target(t, (size_t)(r - t->entries), shared);
        churn_reserve(&t->expanded, &t->expanded_cap, depth, sizeof *t->expanded);
    }
    churn_reserve(&t->ips, &t->ips_cap, t->nips + own, sizeof *t->ips);
    if (own)
        memcpy(t->ips + t->nips, ips, own * sizeof *ips);
    churn_reserve(&t->entries, &t->entries_cap, t->used + 1, sizeof *t->entries);
    t->entries[t->used] = (churn_stack_entry){id, t->nips, depth, own, link, generation};
    t->nips += own;
    *slot = ++t->used;
    return 1;
}

const uint64_t *churn_stack_defs_get(const churn_stack_defs *t, uint64_t id, size_t *depth)
{
    *depth = 0;
    const churn_stack_entry *e = find(t, id);
    if (!e)
        return NULL;
    static const uint64_t no_frames[1];
    *depth = e->depth;
    return e->depth ? expand(t, e) : no_frames;
}

uint64_t churn_stack_defs_generation(const churn_stack_defs *t, uint64_t id)
{
    const churn_stack_entry *e = find(t, id);
    return e ? e->generation : UINT64_MAX;
}

void churn_stack_defs_free(churn_stack_defs *t)
{
    free(t->slots);
    free(t->entries);
    free(t->ips);
    free(t->expanded);
    *t = (churn_stack_defs){0};
}
