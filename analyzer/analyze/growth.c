#include "analyze/growth.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/util.h"

void churn_growth_init(churn_growth *g, uint64_t window_first, uint64_t window_last)
{
    memset(g, 0, sizeof *g);
    g->window_first = window_first;
    g->window_last = window_last;
    g->mask = 1023;
    g->slots = churn_xcalloc(g->mask + 1, sizeof *g->slots);
}

void churn_growth_free(churn_growth *g)
{
    free(g->sites);
    free(g->slots);
    free(g->direct);
    memset(g, 0, sizeof *g);
}

static size_t *find_slot(size_t *slots, size_t mask, const churn_callsite *sites,
                           uint64_t stack)
{
    size_t i = churn_hash64(stack) & mask;
    while (slots[i] && sites[slots[i] - 1].stack != stack)
        i = (i + 1) & mask;
    return &slots[i];
}

static void grow_slots(churn_growth *g)
{
    size_t n = (g->mask + 1) * 2;
    size_t *slots = churn_xcalloc(n, sizeof *slots);
    for (size_t i = 0; i < g->count; i++)
        *find_slot(slots, n - 1, g->sites, g->sites[i].stack) = i + 1;
    free(g->slots);
    g->slots = slots;
    g->mask = n - 1;
}

/* Stack ids are dense (1, 2, ... in the shim), so most lookups are an array index; the hash
   table only serves ids too large for that, which only a damaged trace has. */
#define DIRECT_MAX (1u << 24)

static size_t *direct_slot(churn_growth *g, uint64_t stack)
{
    /* Not past twice the ids known (and a start): one large id in a few bytes of trace
       would otherwise take the array to DIRECT_MAX entries, 128 MiB. */
    if (stack >= DIRECT_MAX || stack >= 2 * (uint64_t)g->count + 65536)
        return NULL;
    if (stack >= g->direct_cap) {
        size_t old = g->direct_cap, n = old ? old : 4096;
        while (n <= stack)
            n *= 2;
        churn_reserve(&g->direct, &g->direct_cap, n, sizeof *g->direct);
        memset(g->direct + old, 0, (g->direct_cap - old) * sizeof *g->direct);
    }
    return &g->direct[stack];
}

churn_callsite *churn_growth_lookup(churn_growth *g, uint64_t stack)
{
    size_t *direct = direct_slot(g, stack);
    if (direct && *direct)
        return &g->sites[*direct - 1];
    size_t *slot = find_slot(g->slots, g->mask, g->sites, stack);
    if (*slot) {
        if (direct) /* a site made while its id was past the array */
            *direct = *slot;
        return &g->sites[*slot - 1];
    }
    churn_reserve(&g->sites, &g->cap, g->count + 1, sizeof *g->sites);
    churn_callsite *s = &g->sites[g->count];
    memset(s, 0, sizeof *s);
    s->stack = stack;
    s->next_point = g->window_first;
    *slot = ++g->count;
    if (direct)
        *direct = g->count;
    if (g->count * 4 > (g->mask + 1) * 3)
        grow_slots(g);
    uint64_t group = g->parent_of ? g->parent_of(g->parent_ctx, stack) : 0;
    if (group)
        s->parent = (size_t)(churn_growth_lookup(g->parents, group) - g->parents->sites) + 1;
    return s;
}

/* Samples the epochs [next_point, until) inside the window at the current live value. */
void churn_growth_sample(churn_growth *g, churn_callsite *s, uint64_t until)
{
    if (until <= s->next_point)
        return;
    uint64_t last = until - 1 < g->window_last ? until - 1 : g->window_last;
    if (s->next_point <= last) {
        churn_fit_add_constant(&s->count_fit, s->next_point, last, (double)s->live_count);
        churn_fit_add_constant(&s->bytes_fit, s->next_point, last, (double)s->live_bytes);
    }
    s->next_point = until;
}

void churn_growth_epoch(churn_callsite *s, uint64_t epoch)
{
    if (!s->changed) {
        s->changed = 1;
        s->first_change = epoch;
    }
    int64_t drop = churn_wrap_sub(s->epoch_start_count, (uint64_t)s->live_count);
    if (drop > s->drop_count) {
        s->drop_count = drop;
        s->drop_from = s->epoch_start_count;
        s->drop_epoch = s->epoch_now;
        s->drop_n = s->count_fit.n;
        s->drop_sum = s->count_fit.n * s->count_fit.mean_y;
    }
    s->epoch_start_count = s->live_count;
    s->epoch_start_bytes = s->live_bytes;
    s->epoch_now = epoch;
}

void churn_growth_set(churn_growth *g, churn_callsite *s, uint64_t epoch, int64_t count,
                      int64_t bytes)
{
    if (epoch > s->epoch_now || !s->changed)
        churn_growth_epoch(s, epoch);
    if (s->parent) {
        churn_callsite *p = &g->parents->sites[s->parent - 1];
        churn_growth_set(g->parents, p, epoch,
                         churn_wrap_add(p->live_count, (uint64_t)count - (uint64_t)s->live_count),
                         churn_wrap_add(p->live_bytes, (uint64_t)bytes - (uint64_t)s->live_bytes));
    }
    churn_growth_sample(g, s, epoch);
    s->live_count = count;
    s->live_bytes = bytes;
}

void churn_growth_finish(churn_growth *g)
{
    if (g->parents) {
        g->parents->window_last = g->window_last;
        g->parents->carried_inherited = g->carried_inherited;
        churn_growth_finish(g->parents);
    }
    for (size_t i = 0; i < g->count; i++)
        churn_growth_sample(g, &g->sites[i], g->window_last == UINT64_MAX ? UINT64_MAX
                                                                    : g->window_last + 1);
}

churn_retained churn_growth_retention(const churn_growth *g, const churn_callsite *s,
                                      enum churn_ending ended)
{
    churn_retained r = {CHURN_RETENTION_STEADY, s->live_count, s->live_bytes, 0, 0};
    int teardown = s->epoch_now > g->window_last; /* its newest change was in the teardown */
    if (teardown) {
        r.count = s->epoch_start_count;
        r.bytes = s->epoch_start_bytes;
    }
    /* The newest epoch's own drop counts too unless it is the teardown's. */
    int64_t drop = s->drop_count, from = s->drop_from;
    uint64_t drop_epoch = s->drop_epoch;
    int64_t last_drop = churn_wrap_sub(s->epoch_start_count, (uint64_t)s->live_count);
    if (!teardown && last_drop > drop) {
        drop = last_drop;
        from = s->epoch_start_count;
        drop_epoch = s->epoch_now;
    }
    /* in doubles: a damaged trace's counts may be anywhere in int64 */
    if (drop >= 2 && 2.0 * (double)drop >= (double)from) {
        r.reclaimed_epoch = drop_epoch;
        r.reclaimed_count = drop;
    }
    /* Accumulated: what is kept is well above the mean live count since the callsite's first
       change (the window's samples before it are the carried value, 0 for a new callsite),
       so a pipeline's few objects in flight that the teardown frees are not "kept". */
    uint64_t from_epoch = s->changed && s->first_change > g->window_first ? s->first_change
                                                                         : g->window_first;
    double active = g->window_last >= from_epoch ? (double)(g->window_last - from_epoch + 1) : 0;
    double mean = active > 0 ? s->count_fit.n * s->count_fit.mean_y / active : 0;
    int accumulated = r.count >= 2 && (double)r.count >= 1.5 * mean;
    /* After a collection, what is kept is a new ramp: the mean before it (a ramp twice as
       high: lua's strings collected once, then 50 turns more) is not its measure.  The
       points since the drop closed: the epochs sampled at that moment stay out, which can
       only raise this mean. */
    if (r.reclaimed_count && drop_epoch == s->drop_epoch && s->count_fit.n > s->drop_n + 1) {
        double since = (s->count_fit.n * s->count_fit.mean_y - s->drop_sum) /
                       (s->count_fit.n - s->drop_n);
        accumulated = accumulated || (r.count >= 2 && (double)r.count >= 1.5 * since);
    }
    int inherited = g->carried_inherited && !s->allocs;
    if (s->live_count > 0 && !inherited)
        r.kind = ended == CHURN_ENDED_ITSELF ? CHURN_RETENTION_LEAKED : CHURN_RETENTION_LIVE;
    else if (ended && teardown && accumulated)
        r.kind = CHURN_RETENTION_KEPT;
    else if (r.reclaimed_count)
        r.kind = CHURN_RETENTION_RECLAIMED;
    return r;
}

const char *churn_retention_name(enum churn_retention kind)
{
    static const char *const names[] = {"steady", "leaked", "kept_until_exit", "reclaimed",
                                         "live"};
    return names[kind];
}

void churn_growth_freed(churn_growth *g, churn_callsite *s, uint64_t alloc_epoch, int old,
                        uint64_t count, uint64_t bytes)
{
    if (s->parent)
        churn_growth_freed(g->parents, &g->parents->sites[s->parent - 1], alloc_epoch, old,
                           count, bytes);
    if (old) {
        s->freed_old_count += count;
        s->freed_old_bytes += bytes;
    }
    if (!s->freed_count || alloc_epoch < s->freed_from)
        s->freed_from = alloc_epoch;
    if (!s->freed_count || alloc_epoch > s->freed_to)
        s->freed_to = alloc_epoch;
    s->freed_count += count;
    s->freed_bytes += bytes;
}

static int by_freed(const void *a, const void *b)
{
    const churn_callsite *x = *(churn_callsite *const *)a, *y = *(churn_callsite *const *)b;
    if (x->freed_old_bytes != y->freed_old_bytes)
        return x->freed_old_bytes > y->freed_old_bytes ? -1 : 1;
    if (x->freed_bytes != y->freed_bytes)
        return x->freed_bytes > y->freed_bytes ? -1 : 1;
    if (x->freed_count != y->freed_count)
        return x->freed_count > y->freed_count ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

churn_callsite **churn_growth_sorted_by_freed(const churn_growth *g, size_t top, size_t *n)
{
    churn_callsite **v = churn_xmalloc((g->count ? g->count : 1) * sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < g->count; i++)
        if (g->sites[i].freed_count)
            v[k++] = &g->sites[i];
    qsort(v, k, sizeof *v, by_freed);
    *n = top && top < k ? top : k;
    return v;
}

static int by_growth(const void *a, const void *b)
{
    const churn_callsite *x = *(churn_callsite *const *)a, *y = *(churn_callsite *const *)b;
    double sx = churn_fit_slope(&x->bytes_fit), sy = churn_fit_slope(&y->bytes_fit);
    if (sx != sy)
        return sx > sy ? -1 : 1;
    if (x->live_bytes != y->live_bytes)
        return x->live_bytes > y->live_bytes ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

churn_callsite **churn_growth_sorted(const churn_growth *g, size_t *n)
{
    churn_callsite **v = churn_xmalloc((g->count ? g->count : 1) * sizeof *v);
    for (size_t i = 0; i < g->count; i++)
        v[i] = &g->sites[i];
    qsort(v, g->count, sizeof *v, by_growth);
    *n = g->count;
    return v;
}
