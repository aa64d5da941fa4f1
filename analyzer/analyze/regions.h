/*
 * The program's own page mappings: address ranges mapped by mmap calls that did not come from
 * inside the allocator (a JS engine's heap, file mappings, buffers), as the trace's MAP
 * records tell them, each with the stack of the call that mapped it, and their total size.
 * It is virtual size: the part of RSS outside the allocator that the program mapped itself,
 * at most.
 *
 * The ranges are disjoint and kept in a treap by start (a search tree balanced by random
 * priorities), so a call costs the logarithm of the ranges plus those it removes, in any
 * order of addresses: mappings made from the top of the address space down, as mmap hands
 * them out, cost what mappings made upward do.
 */
#ifndef CHURN_REGIONS_H
#define CHURN_REGIONS_H

#include <stddef.h>
#include <stdint.h>

typedef struct churn_region churn_region;

typedef struct churn_regions {
    churn_region *root;
    uint64_t bytes;
    uint64_t draws;   /* priorities drawn so far (they come from a hash of this count) */
    /* Told the bytes of every range removed, with the stack that mapped it, when set. */
    void (*gone)(void *ctx, uint64_t stack, uint64_t bytes);
    void *ctx;
} churn_regions;

/* Maps [start, start + len) for the call of stack `stack`, replacing whatever was mapped
   there (MAP_FIXED). */
void churn_regions_map(churn_regions *r, uint64_t start, uint64_t len, uint64_t stack);

/* Unmaps [start, start + len); returns the bytes that were mapped there. */
uint64_t churn_regions_unmap(churn_regions *r, uint64_t start, uint64_t len);

void churn_regions_free(churn_regions *r);

#endif
