#include "epochs.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "util.h"

static size_t *index_slot(const churn_epochs *t, uint64_t epoch)
{
    size_t i = churn_hash64(epoch) & t->index_mask;
    while (t->index[i] && t->rows[t->index[i] - 1].epoch != epoch)
        i = (i + 1) & t->index_mask;
    return &t->index[i];
}

static void reindex(churn_epochs *t, size_t slots)
{
    free(t->index);
    t->index = churn_xcalloc(slots, sizeof *t->index);
    t->index_mask = slots - 1;
    for (size_t i = 0; i < t->count; i++)
        *index_slot(t, t->rows[i].epoch) = i + 1;
}

const churn_epoch_row *churn_epochs_lookup(const churn_epochs *t, uint64_t epoch)
{
    if (!t->index)
        return NULL;
    size_t at = *index_slot(t, epoch);
    return at ? &t->rows[at - 1] : NULL;
}

churn_epoch_row *churn_epochs_find(churn_epochs *t, uint64_t epoch)
{
    if (!t->index || (t->count + 1) * 2 > t->index_mask + 1)
        reindex(t, t->index ? (t->index_mask + 1) * 2 : 1024);
    size_t *slot = index_slot(t, epoch);
    if (*slot)
        return &t->rows[*slot - 1];
    churn_reserve(&t->rows, &t->cap, t->count + 1, sizeof *t->rows);
    if (t->count && t->rows[t->count - 1].epoch > epoch)
        t->unsorted = 1;
    churn_epoch_row *r = &t->rows[t->count];
    memset(r, 0, sizeof *r);
    r->epoch = epoch;
    *slot = ++t->count;
    return r;
}

static int by_epoch(const void *a, const void *b)
{
    const churn_epoch_row *x = a, *y = b;
    return x->epoch < y->epoch ? -1 : x->epoch > y->epoch;
}

void churn_epochs_settle(churn_epochs *t)
{
    if (!t->unsorted)
        return;
    qsort(t->rows, t->count, sizeof *t->rows, by_epoch);
    reindex(t, t->index_mask + 1);
    t->unsorted = 0;
}

int churn_epochs_summary(churn_epochs *t, const churn_epoch_summary *s)
{
    churn_epoch_row *r = churn_epochs_row(t, s->epoch);
    if (r->has_summary)
        return 0;
    r->has_summary = 1;
    r->start_ns = s->start_ns;
    r->wall_ns = s->wall_ns;
    r->cpu_ns = s->cpu_ns;
    r->rss_bytes = s->rss_bytes;
    r->late_events = s->late_events;
    r->s_allocs = s->allocs;
    r->s_frees = s->frees;
    r->s_alloc_bytes = s->alloc_bytes;
    r->s_free_bytes = s->free_bytes;
    r->s_live_count = s->live_count;
    r->s_live_bytes = s->live_bytes;
    churn_reserve(&t->counters, &t->counters_cap, t->ncounters + s->n_counters,
                  sizeof *t->counters);
    if (s->n_counters)
        memcpy(t->counters + t->ncounters, s->counters, s->n_counters * sizeof *s->counters);
    r->counters_first = t->ncounters;
    r->n_counters = s->n_counters;
    t->ncounters += s->n_counters;
    return 1;
}

void churn_epochs_free(churn_epochs *t)
{
    free(t->rows);
    free(t->counters);
    free(t->index);
    memset(t, 0, sizeof *t);
}
