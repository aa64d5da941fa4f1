#include "analyze/lifetime.h"

#include <stdio.h>

const char *churn_lifetime_label(unsigned bucket, char *buf, size_t len)
{
    if (bucket == 0)
        return "same";
    if (bucket == CHURN_LIFETIME_NEVER)
        return "never";
    uint64_t lo = (uint64_t)1 << (bucket - 1);
    if (bucket == CHURN_LIFETIME_AGED - 1)
        snprintf(buf, len, "%llu+", (unsigned long long)lo);
    else if (lo == 1)
        snprintf(buf, len, "1");
    else
        snprintf(buf, len, "%llu-%llu", (unsigned long long)lo,
                 (unsigned long long)(2 * lo - 1));
    return buf;
}
