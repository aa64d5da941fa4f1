/* The writer's per-segment coding tables (see segstate.c). */
#ifndef CHURN_SEGSTATE_H
#define CHURN_SEGSTATE_H

#include <stdint.h>

typedef struct churn_seg_info {
    uint64_t size, slack;
    uint32_t stack;
} churn_seg_info;

/* The tables' first blocks, at the writer's start (writer.c, prime_buffers). */
void churn_seg_prime(void);
/* A new segment. */
void churn_seg_reset(void);
/* The open segment's generation (not 0): what the live map's entries note (shim.h). */
uint32_t churn_seg_current(void);
/* The info's index in this segment, defined now when *is_new; -1 when out of memory. */
long churn_seg_info_index(uint64_t size, uint64_t slack, uint32_t stack, int *is_new);

#endif
