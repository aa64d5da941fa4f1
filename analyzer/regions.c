#include "regions.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The first region that ends after addr. */
static size_t first_after(const churn_regions *r, uint64_t addr)
{
    size_t lo = 0, hi = r->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->items[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void insert_at(churn_regions *r, size_t i, uint64_t start, uint64_t end)
{
    churn_reserve(&r->items, &r->cap, r->count + 1, sizeof *r->items);
    memmove(&r->items[i + 1], &r->items[i], (r->count - i) * sizeof *r->items);
    r->items[i] = (churn_region){start, end};
    r->count++;
}

uint64_t churn_regions_unmap(churn_regions *r, uint64_t start, uint64_t len)
{
    uint64_t end = start + len < start ? UINT64_MAX : start + len, removed = 0;
    size_t i = first_after(r, start);
    while (i < r->count && r->items[i].start < end) {
        churn_region *g = &r->items[i];
        uint64_t lo = g->start > start ? g->start : start, hi = g->end < end ? g->end : end;
        removed += hi - lo;
        if (g->start < start && g->end > end) { /* a hole in the middle: split */
            uint64_t tail = g->end;
            g->end = start;
            insert_at(r, i + 1, end, tail);
            break;
        }
        if (g->start < start) {
            g->end = start;
            i++;
        } else if (g->end > end) {
            g->start = end;
            break;
        } else {
            memmove(g, g + 1, (r->count - i - 1) * sizeof *g);
            r->count--;
        }
    }
    r->bytes -= removed;
    return removed;
}

void churn_regions_map(churn_regions *r, uint64_t start, uint64_t len)
{
    if (!len || start + len < start)
        return;
    churn_regions_unmap(r, start, len);
    insert_at(r, first_after(r, start), start, start + len);
    r->bytes += len;
}

void churn_regions_free(churn_regions *r)
{
    free(r->items);
    memset(r, 0, sizeof *r);
}
