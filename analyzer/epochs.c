#include "epochs.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The index of the first row whose epoch is not below epoch. */
static size_t lower_bound(const churn_epochs *t, uint64_t epoch)
{
    size_t lo = 0, hi = t->count;
    if (t->count && t->rows[t->count - 1].epoch < epoch)
        return t->count; /* the usual case: a new epoch after every known one */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->rows[mid].epoch < epoch)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const churn_epoch_row *churn_epochs_lookup(const churn_epochs *t, uint64_t epoch)
{
    size_t i = lower_bound(t, epoch);
    return i < t->count && t->rows[i].epoch == epoch ? &t->rows[i] : NULL;
}

churn_epoch_row *churn_epochs_find(churn_epochs *t, uint64_t epoch)
{
    size_t lo = lower_bound(t, epoch);
    if (lo < t->count && t->rows[lo].epoch == epoch)
        return &t->rows[lo];
    churn_reserve(&t->rows, &t->cap, t->count + 1, sizeof *t->rows);
    memmove(&t->rows[lo + 1], &t->rows[lo], (t->count - lo) * sizeof *t->rows);
    t->count++;
    memset(&t->rows[lo], 0, sizeof t->rows[lo]);
    t->rows[lo].epoch = epoch;
    return &t->rows[lo];
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
    memset(t, 0, sizeof *t);
}
