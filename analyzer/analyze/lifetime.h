/*
 * Lifetime buckets, in epochs between allocation and free: "same" (freed in the epoch that
 * allocated it), then powers of two ("1", "2-3", "4-7", ...), an open last bucket, and
 * "never" (still live at the end of the analyzed window).
 */
#ifndef CHURN_LIFETIME_H
#define CHURN_LIFETIME_H

#include <stddef.h>
#include <stdint.h>

#define CHURN_LIFETIME_AGED 16 /* "same", "1", "2-3", ..., "8192-16383", "16384+" */
#define CHURN_LIFETIME_NEVER CHURN_LIFETIME_AGED
#define CHURN_LIFETIME_BUCKETS (CHURN_LIFETIME_AGED + 1)

static inline unsigned churn_lifetime_bucket(uint64_t age)
{
    if (age == 0)
        return 0;
    unsigned b = 1 + (63u - (unsigned)__builtin_clzll(age));
    return b < CHURN_LIFETIME_AGED ? b : CHURN_LIFETIME_AGED - 1;
}

/* The bucket's label, e.g. "same", "4-7", "16384+", "never". */
const char *churn_lifetime_label(unsigned bucket, char *buf, size_t len);

#endif
