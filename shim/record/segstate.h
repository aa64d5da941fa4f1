/* The writer's per-segment coding tables (see segstate.c). */
#ifndef CHURN_SEGSTATE_H
#define CHURN_SEGSTATE_H

#include <stdint.h>

typedef struct churn_seg_info {
    uint64_t size, slack;
    uint32_t stack;
} churn_seg_info;

/* A new segment, whose first epoch is first_epoch. */
void churn_seg_reset(uint64_t first_epoch);
/* The info's index in this segment, defined now when *is_new; -1 when out of memory. */
long churn_seg_info_index(uint64_t size, uint64_t slack, uint32_t stack, int *is_new);
const churn_seg_info *churn_seg_info_get(uint32_t index);
/* addr's entry from now on; one that cannot be kept (an epoch or number out of range) is
   forgotten, and addr's free then describes itself. */
void churn_seg_live_put(uint64_t addr, uint64_t number, uint32_t info, uint64_t epoch);
/* Removes the entry; returns 0 when there was none. */
int churn_seg_live_take(uint64_t addr, uint64_t *number, uint32_t *info, uint64_t *epoch);

#endif
