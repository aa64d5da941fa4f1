/*
 * The program's own page mappings: address ranges mapped by mmap calls that did not come from
 * inside the allocator (a JS engine's heap, file mappings, buffers), as the trace's MAP
 * records tell them, with their total size.  It is virtual size: the part of RSS outside the
 * allocator that the program mapped itself, at most.
 */
#ifndef CHURN_REGIONS_H
#define CHURN_REGIONS_H

#include <stddef.h>
#include <stdint.h>

typedef struct churn_region {
    uint64_t start, end;
} churn_region;

typedef struct churn_regions {
    churn_region *items;   /* disjoint, sorted by start */
    size_t count, cap;
    uint64_t bytes;
} churn_regions;

/* Maps [start, start + len), replacing whatever was mapped there (MAP_FIXED). */
void churn_regions_map(churn_regions *r, uint64_t start, uint64_t len);

/* Unmaps [start, start + len); returns the bytes that were mapped there. */
uint64_t churn_regions_unmap(churn_regions *r, uint64_t start, uint64_t len);

void churn_regions_free(churn_regions *r);

#endif
