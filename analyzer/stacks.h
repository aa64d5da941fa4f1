/*
 * The stack table: stack id -> instruction pointers, innermost first.  Ids are global to a
 * trace; every segment re-defines the stacks it uses, so the first definition is kept and a
 * different later one is reported.  Each stack remembers the module map's generation at its
 * first definition (symbolize.h): a library unloaded and another loaded at its addresses
 * later must not rename its frames.
 */
#ifndef CHURN_STACKS_H
#define CHURN_STACKS_H

#include <stddef.h>
#include <stdint.h>

typedef struct churn_stack_slot {
    uint64_t id;     /* 0: empty */
    size_t first;    /* index into ips */
    size_t depth;
    uint64_t generation;
} churn_stack_slot;

typedef struct churn_stacks {
    churn_stack_slot *slots;
    size_t mask, used;
    uint64_t *ips;
    size_t nips, ips_cap;
} churn_stacks;

/* Returns 1 when id is new, 0 when it matches the known definition, -1 when it differs. */
int churn_stacks_define(churn_stacks *t, uint64_t id, const uint64_t *ips, size_t depth,
                        uint64_t generation);

/* The ips of a stack, or NULL (depth 0) when id was never defined. */
const uint64_t *churn_stacks_get(const churn_stacks *t, uint64_t id, size_t *depth);

/* The module map's generation when id was first defined (UINT64_MAX: unknown, the newest). */
uint64_t churn_stacks_generation(const churn_stacks *t, uint64_t id);

void churn_stacks_free(churn_stacks *t);

#endif
