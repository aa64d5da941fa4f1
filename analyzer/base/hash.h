/*
 * The integer mixer shared by the analyzer's open-addressing tables (addresses and stack ids
 * are far from uniform in their low bits).
 */
#ifndef CHURN_HASH_H
#define CHURN_HASH_H

#include <stdint.h>

static inline uint64_t churn_hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#endif
