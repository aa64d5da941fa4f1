/*
 * The stack table: stack id -> instruction pointers, innermost first.  Ids are global to a
 * trace; every segment re-defines the stacks it uses, so the first definition is kept and a
 * different later one is reported.  Each stack remembers the module map's generation at its
 * first definition (symbolize.h): a library unloaded and another loaded at its addresses
 * later must not rename its frames.
 *
 * A stack that the trace defines as sharing its outermost frames with another (format.h,
 * STACK's ref) keeps only its own frames and a link to the stack holding the rest, so the
 * table grows with the records that define stacks, not with their depths: a few bytes of
 * STACK record can name 256 frames.  Links point at a stack whose own frames hold the
 * first shared one, so expanding a stack takes at most one step per frame.
 */
#ifndef CHURN_STACKS_H
#define CHURN_STACKS_H

#include <stddef.h>
#include <stdint.h>

typedef struct churn_stack_entry {
    uint64_t id;
    size_t first;        /* its own frames: ips[first, first + own) */
    size_t depth, own;
    size_t ref;          /* index of the entry holding frames [own, depth); SIZE_MAX: none */
    uint64_t generation;
} churn_stack_entry;

typedef struct churn_stack_defs {
    size_t *slots;       /* open addressing by id: entry index + 1, 0 empty */
    size_t mask;
    churn_stack_entry *entries;
    size_t used, entries_cap;
    uint64_t *ips;
    size_t nips, ips_cap;
    uint64_t *expanded;  /* a linked stack's frames, as the last get expanded them */
    size_t expanded_cap;
} churn_stack_defs;

/* Defines id as ips[0, depth).  When ref is not 0, the record said its outermost `shared`
   frames are ref's outermost ones; they are linked, not copied, when the table's ref has
   those very frames.  Returns 1 when id is new, 0 when it matches the known definition, -1
   when it differs. */
int churn_stack_defs_define(churn_stack_defs *t, uint64_t id, const uint64_t *ips, size_t depth,
                            uint64_t generation, uint64_t ref, size_t shared);

/* The ips of a stack, or NULL (depth 0) when id was never defined.  Valid until the next
   call on the table. */
const uint64_t *churn_stack_defs_get(const churn_stack_defs *t, uint64_t id, size_t *depth);

/* The module map's generation when id was first defined (UINT64_MAX: unknown, the newest). */
uint64_t churn_stack_defs_generation(const churn_stack_defs *t, uint64_t id);

void churn_stack_defs_free(churn_stack_defs *t);

#endif
