#include "heap/peak.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/util.h"

void churn_peak_init(churn_peak *p, int has_first, uint64_t first, int has_last, uint64_t last)
{
    memset(p, 0, sizeof *p);
    p->has_first = has_first;
    p->first = first;
    p->has_last = has_last;
    p->last = last;
}

void churn_peak_free(churn_peak *p)
{
    free(p->sites);
    free(p->index);
    p->sites = NULL;
    p->index = NULL;
}

void churn_peak_new_max(churn_peak *p, uint64_t epoch)
{
    if (!p->has_peak || !churn_peak_counts_at(p, epoch))
        return;
    p->peak_bytes = p->bytes;
    p->peak_count = p->count;
    p->peak_epoch = epoch;
    p->ver++;
}

/* Folds the epoch being left into the bounds. */
static void fold_epoch(churn_peak *p)
{
    if (!p->ep_open || !churn_peak_counts_at(p, p->ep))
        return;
    int64_t lo = p->ep_multi ? (p->bytes > p->ep_start ? p->bytes : p->ep_start) : p->ep_max;
    int64_t hi = p->ep_multi ? churn_wrap_add(p->ep_start, (uint64_t)p->ep_alloc) : p->ep_max;
    if (!p->folded || lo > p->lower)
        p->lower = lo;
    if (!p->folded || hi > p->upper)
        p->upper = hi;
    p->folded = 1;
}

void churn_peak_epoch_change(churn_peak *p, uint64_t epoch)
{
    fold_epoch(p);
    p->ep_open = 1;
    p->ep = epoch;
    p->ep_tid = p->tid;
    p->ep_multi = 0;
    p->ep_start = p->ep_max = p->bytes;
    p->ep_alloc = 0;
}

void churn_peak_bounds(churn_peak *p, int64_t *lower, int64_t *upper)
{
    fold_epoch(p);
    p->ep_open = 0;
    *lower = p->folded ? p->lower : p->peak_bytes;
    *upper = p->folded ? p->upper : p->peak_bytes;
    /* the stream's own maximum is one order's: inside the bounds by construction */
    if (*lower > p->peak_bytes)
        *lower = p->peak_bytes;
    if (*upper < p->peak_bytes)
        *upper = p->peak_bytes;
}

void churn_peak_enter(churn_peak *p, uint64_t epoch)
{
    if (!churn_peak_counts_at(p, epoch))
        return;
    p->has_peak = 1;
    p->peak_bytes = p->bytes;
    p->peak_count = p->count;
    p->peak_epoch = epoch;
    p->ver++;
}

static void index_grow(churn_peak *p)
{
    size_t n = p->index ? (p->index_mask + 1) * 2 : 1024;
    uint32_t *bigger = churn_xcalloc(n, sizeof *bigger);
    for (size_t i = 1; i < p->nsites; i++) {
        size_t j = churn_hash64(p->sites[i].stack) & (n - 1);
        while (bigger[j])
            j = (j + 1) & (n - 1);
        bigger[j] = (uint32_t)i;
    }
    free(p->index);
    p->index = bigger;
    p->index_mask = n - 1;
}

uint32_t churn_peak_site_of(churn_peak *p, uint64_t stack)
{
    if (!p->index || (p->nsites + 1) * 2 > p->index_mask + 1)
        index_grow(p);
    size_t i = churn_hash64(stack) & p->index_mask;
    for (; p->index[i]; i = (i + 1) & p->index_mask)
        if (p->sites[p->index[i]].stack == stack)
            return p->index[i];
    if (!p->nsites)
        p->nsites = 1;
    churn_reserve(&p->sites, &p->cap, p->nsites + 1, sizeof *p->sites);
    p->sites[p->nsites] = (churn_peak_site){.stack = stack, .at_ver = p->ver};
    p->index[i] = (uint32_t)p->nsites;
    return (uint32_t)p->nsites++;
}
