/*
 * libchurn's own heap, for the writer's buffers, zstd's workspace and the module map.  These
 * are few and mostly large, so every block is its own mapping with a size header: simple,
 * thread-safe without a lock, and invisible to the traced program's allocator.
 *
 * Every block comes zeroed, being a fresh anonymous mapping, and a block realloc moves keeps
 * that: the old block is copied whole, its never-written tail zeros with it.  Callers rely on
 * it instead of clearing: clearing would touch, so fault in, every page of a table at once
 * (a page fault costs about 10 us here, docs/benchmarks.md "Start-up").
 */
#include <string.h>

#include "shim.h"

#define HEADER 16u

void *churn_mem_alloc(size_t bytes)
{
    size_t total = (bytes + HEADER + 4095) & ~(size_t)4095;
    uint8_t *p = churn_os_map(total);
    if (!p)
        return NULL;
    *(size_t *)p = total;
    return p + HEADER;
}

void churn_mem_free(void *p)
{
    if (!p)
        return;
    uint8_t *base = (uint8_t *)p - HEADER;
    churn_os_unmap(base, *(size_t *)base);
}

void *churn_mem_realloc(void *p, size_t bytes)
{
    if (!p)
        return churn_mem_alloc(bytes);
    size_t have = *(size_t *)((uint8_t *)p - HEADER) - HEADER;
    if (bytes <= have)
        return p;
    void *q = churn_mem_alloc(bytes);
    if (!q)
        return NULL;
    memcpy(q, p, have);
    churn_mem_free(p);
    return q;
}
