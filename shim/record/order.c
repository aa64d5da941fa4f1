/*
 * The order of events on one address (shim.h, "order.c"): the shards' words, one cache line
 * each, so that threads allocating in different regions never share one.
 */
#include "shim.h"

churn_order_word churn_order[CHURN_LIVEMAP_SHARDS];

void churn_order_next(uint32_t *next)
{
    for (unsigned i = 0; i < CHURN_LIVEMAP_SHARDS; i++)
        next[i] = (uint32_t)atomic_load_explicit(&churn_order[i].word, memory_order_acquire);
}
