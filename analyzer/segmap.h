/*
 * The per-segment live map of the event coding (format.h, coding.h): address -> (allocation
 * number, info index, epoch) of every ALLOC of the current segment, removed by any free of
 * that address.  A short free names only which allocation it frees; the rest comes from here.  It must behave
 * exactly like the shim's copy: an ALLOC at an address already present replaces the entry.
 */
#ifndef CHURN_SEGMAP_H
#define CHURN_SEGMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct churn_segmap_entry {
    uint64_t addr;
    uint64_t number; /* the allocation's number in the segment */
    uint64_t info;
    uint64_t epoch;
    uint32_t generation; /* the slot is empty unless this equals the map's generation */
} churn_segmap_entry;

typedef struct churn_segmap {
    churn_segmap_entry *slots;
    size_t mask, count;
    uint32_t generation;
} churn_segmap;

/* Empties the map in O(1) (a new generation), for the start of a segment. */
void churn_segmap_clear(churn_segmap *m);
void churn_segmap_put(churn_segmap *m, uint64_t addr, uint64_t number, uint64_t info,
                      uint64_t epoch);
/* Removes addr; returns 1 with *out filled when it was present. */
int churn_segmap_take(churn_segmap *m, uint64_t addr, churn_segmap_entry *out);
void churn_segmap_free(churn_segmap *m);

#endif
