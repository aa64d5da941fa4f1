#include "analyze/epochs.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/util.h"

/* Epochs this far before `settled` may still get a late summary into their own row. */
#define SETTLE_LAG 64

static int same_bucket(const churn_epoch_row *r, uint64_t epoch)
{
    return (epoch >> r->shift) == (r->epoch >> r->shift);
}

static size_t *index_slot(const churn_epochs *t, uint64_t epoch)
{
    size_t i = churn_hash64(epoch) & t->index_mask;
    while (t->index[i] && t->rows[t->index[i] - 1].epoch != epoch)
        i = (i + 1) & t->index_mask;
    return &t->index[i];
}

/* Indexes the one-epoch rows, in a table at least twice their number. */
static void reindex(churn_epochs *t, size_t want)
{
    size_t slots = 1024;
    while (slots < 2 * want)
        slots *= 2;
    if (!t->index || slots != t->index_mask + 1) {
        free(t->index);
        t->index = churn_xcalloc(slots, sizeof *t->index);
        t->index_mask = slots - 1;
    } else {
        memset(t->index, 0, slots * sizeof *t->index);
    }
    for (size_t i = 0; i < t->count; i++)
        if (t->rows[i].shift == 0)
            *index_slot(t, t->rows[i].epoch) = i + 1;
}

/* Index of the last of the sorted rows whose first epoch is <= epoch, or -1. */
static ptrdiff_t row_before(const churn_epochs *t, uint64_t epoch)
{
    size_t lo = 0, hi = t->nsorted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->rows[mid].epoch <= epoch)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

static const churn_epoch_row *find(const churn_epochs *t, uint64_t epoch)
{
    if (t->count && same_bucket(&t->rows[t->count - 1], epoch))
        return &t->rows[t->count - 1];
    if (t->index) {
        size_t at = *index_slot(t, epoch);
        if (at)
            return &t->rows[at - 1];
    }
    if (!t->shift)
        return NULL;
    ptrdiff_t i = row_before(t, epoch);
    if (i >= 0 && same_bucket(&t->rows[i], epoch))
        return &t->rows[i];
    if ((size_t)(i + 1) < t->nsorted && same_bucket(&t->rows[i + 1], epoch))
        return &t->rows[i + 1];
    return NULL;
}

static void widen(churn_epoch_row *r, uint64_t epoch)
{
    if (epoch < r->epoch)
        r->epoch = epoch;
    if (epoch > r->last)
        r->last = epoch;
}

/* The row's epoch values join the window's fits, in the order a per-epoch pass takes them. */
static void seal(churn_epochs *t, churn_epoch_row *r, int first)
{
    if (r->sealed)
        return;
    r->sealed = 1;
    churn_epoch_fits *f = &t->fits;
    int in_fit = !t->has_fit || (r->epoch >= t->fit_first && r->epoch <= t->fit_last);
    if (r->has_live && in_fit)
        churn_fit_add_constant(&f->live, r->epoch, r->epoch, (double)r->live_bytes);
    if (r->has_summary && in_fit) {
        churn_fit_add_constant(&f->rss, r->epoch, r->epoch, (double)r->rss_bytes);
        churn_fit_add_constant(&f->wall, r->epoch, r->epoch, (double)r->wall_ns);
        if (r->has_live)
            churn_fit2_add(&f->wall_live, (double)r->wall_ns, (double)r->live_bytes);
    }
    int keep[2] = {first && !t->has_kept[0],
                   r->has_summary && (!t->has_kept[1] || r->rss_bytes > t->kept[1].rss_bytes)};
    for (int k = 0; k < 2; k++) {
        if (!keep[k])
            continue;
        t->kept[k] = *r;
        t->has_kept[k] = 1;
        free(t->kept_counters[k]);
        t->kept_counters[k] = churn_xmalloc((r->n_counters ? r->n_counters : 1) * sizeof(uint64_t));
        if (r->n_counters)
            memcpy(t->kept_counters[k], t->counters + r->counters_first,
                   r->n_counters * sizeof(uint64_t));
    }
}

/* b, the row after a, joins a. */
static void merge_into(churn_epoch_row *a, const churn_epoch_row *b)
{
    widen(a, b->epoch);
    widen(a, b->last);
    a->allocs += b->allocs;
    a->frees += b->frees;
    a->alloc_bytes += b->alloc_bytes;
    a->free_bytes += b->free_bytes;
    a->dropped += b->dropped;
    if (b->has_live) {
        if (!a->has_live || b->live_epoch >= a->live_epoch) {
            a->live_count = b->live_count;
            a->live_bytes = b->live_bytes;
            a->live_usable_bytes = b->live_usable_bytes;
            a->live_epoch = b->live_epoch;
        }
        a->live_min = a->has_live && a->live_min < b->live_min ? a->live_min : b->live_min;
        a->live_max = a->has_live && a->live_max > b->live_max ? a->live_max : b->live_max;
        a->live_sum += b->live_sum;
        a->n_live += b->n_live;
        a->has_live = 1;
    }
    if (!b->has_summary)
        return;
    if (!a->has_summary || b->start_ns < a->start_ns)
        a->start_ns = b->start_ns;
    a->wall_ns += b->wall_ns;
    a->cpu_ns += b->cpu_ns;
    a->late_events += b->late_events;
    a->s_allocs += b->s_allocs;
    a->s_frees += b->s_frees;
    a->s_alloc_bytes += b->s_alloc_bytes;
    a->s_free_bytes += b->s_free_bytes;
    a->wall_min = a->has_summary && a->wall_min < b->wall_min ? a->wall_min : b->wall_min;
    a->wall_max = a->has_summary && a->wall_max > b->wall_max ? a->wall_max : b->wall_max;
    a->rss_min = a->has_summary && a->rss_min < b->rss_min ? a->rss_min : b->rss_min;
    a->rss_max = a->has_summary && a->rss_max > b->rss_max ? a->rss_max : b->rss_max;
    if (!a->has_summary || b->summary_epoch >= a->summary_epoch) {
        a->summary_epoch = b->summary_epoch;
        a->rss_bytes = b->rss_bytes;
        a->s_live_count = b->s_live_count;
        a->s_live_bytes = b->s_live_bytes;
        a->counters_first = b->counters_first;
        a->n_counters = b->n_counters;
        a->counters_stale = b->counters_stale;
        a->counters_age_ns = b->counters_age_ns;
        a->mapped_bytes = b->mapped_bytes;
        a->at_summary_count = b->at_summary_count;
        a->at_summary_bytes = b->at_summary_bytes;
    }
    a->n_summary += b->n_summary;
    a->has_summary = 1;
}

static int by_epoch(const void *a, const void *b)
{
    const churn_epoch_row *x = a, *y = b;
    return x->epoch < y->epoch ? -1 : x->epoch > y->epoch;
}

void churn_epochs_sort(churn_epochs *t)
{
    if (t->unsorted) {
        qsort(t->rows, t->count, sizeof *t->rows, by_epoch);
        reindex(t, t->count);
        t->unsorted = 0;
    }
    t->nsorted = t->count;
}

/* Only the rows' own counters stay: those of merged-away rows and replaced states go. */
static void compact_counters(churn_epochs *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->count; i++)
        n += t->rows[i].n_counters;
    uint64_t *c = churn_xmalloc((n ? n : 1) * sizeof *c);
    size_t at = 0;
    for (size_t i = 0; i < t->count; i++) {
        churn_epoch_row *r = &t->rows[i];
        if (r->n_counters)
            memcpy(c + at, t->counters + r->counters_first, r->n_counters * sizeof *c);
        r->counters_first = at;
        at += r->n_counters;
    }
    free(t->counters);
    t->counters = c;
    t->ncounters = t->counters_cap = n ? n : 1;
    t->ncounters = n;
}

/* Rows ending before limit are sealed and merge with their neighbours of the same bucket of
   width 1 << shift. */
static void merge_pass(churn_epochs *t, unsigned shift, uint64_t limit)
{
    churn_epochs_sort(t);
    size_t out = 0;
    for (size_t i = 0; i < t->count; i++) {
        churn_epoch_row r = t->rows[i];
        if (r.last < limit) {
            seal(t, &r, i == 0);
            r.shift = shift;
            churn_epoch_row *prev = out ? &t->rows[out - 1] : NULL;
            if (prev && prev->sealed && prev->last < limit && same_bucket(prev, r.epoch)) {
                merge_into(prev, &r);
                continue;
            }
        }
        t->rows[out++] = r;
    }
    t->count = t->nsorted = out;
    if (shift > t->shift)
        t->shift = shift;
    reindex(t, t->count);
}

/* Makes room: merges at the current width, then wider, until a quarter of the table is free.
   Rows still waiting for their values are held back, unless they are most of the table (a
   stream whose epochs never settle), which then merges as it is. */
static void shrink(churn_epochs *t)
{
    churn_epochs_sort(t);
    uint64_t limit = t->settled > SETTLE_LAG ? t->settled - SETTLE_LAG : 0;
    size_t eligible = 0;
    while (eligible < t->count && t->rows[eligible].last < limit)
        eligible++;
    if (eligible < CHURN_EPOCH_ROWS / 2)
        limit = UINT64_MAX;
    unsigned shift = t->shift ? t->shift : 1;
    for (;;) {
        merge_pass(t, shift, limit);
        if (t->count <= CHURN_EPOCH_ROWS - CHURN_EPOCH_ROWS / 4 || shift >= 63)
            break;
        shift++;
    }
    compact_counters(t);
}

churn_epoch_row *churn_epochs_row(churn_epochs *t, uint64_t epoch)
{
    churn_epoch_row *r = (churn_epoch_row *)find(t, epoch);
    if (r) {
        widen(r, epoch);
        return r;
    }
    if (!t->keep_all && t->count >= CHURN_EPOCH_ROWS) {
        shrink(t);
        if ((r = (churn_epoch_row *)find(t, epoch))) {
            widen(r, epoch);
            return r;
        }
    }
    if (!t->index || (t->count + 1) * 2 > t->index_mask + 1)
        reindex(t, t->count + 1);
    churn_reserve(&t->rows, &t->cap, t->count + 1, sizeof *t->rows);
    if (t->count && t->rows[t->count - 1].epoch > epoch)
        t->unsorted = 1;
    r = &t->rows[t->count];
    memset(r, 0, sizeof *r);
    r->epoch = r->last = epoch;
    *index_slot(t, epoch) = ++t->count;
    if (epoch > t->max_epoch)
        t->max_epoch = epoch;
    return r;
}

const churn_epoch_row *churn_epochs_containing(const churn_epochs *t, uint64_t epoch)
{
    return find(t, epoch);
}

const churn_epoch_row *churn_epochs_lookup(const churn_epochs *t, uint64_t epoch)
{
    const churn_epoch_row *r = find(t, epoch);
    if (r && (r->shift == 0 || (r->has_summary && r->summary_epoch == epoch)))
        return r;
    for (int k = 0; k < 2; k++)
        if (t->has_kept[k] && t->kept[k].epoch == epoch)
            return &t->kept[k];
    return NULL;
}

const uint64_t *churn_epochs_counters(const churn_epochs *t, const churn_epoch_row *r)
{
    for (int k = 0; k < 2; k++)
        if (r == &t->kept[k])
            return t->kept_counters[k];
    /* none in a trace whose allocator has no counters: no table to point into */
    return t->counters ? t->counters + r->counters_first : NULL;
}

/* Records that an epoch has a summary; 0 if it had one already. */
static int note_summary(churn_epochs *t, uint64_t e)
{
    uint64_t(*s)[2] = t->summaries;
    size_t n = t->nsummaries;
    if (n && s[n - 1][1] < e) {
        if (s[n - 1][1] + 1 == e) {
            s[n - 1][1] = e;
            return 1;
        }
    } else if (n) {
        /* lo: the first run starting after e */
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (s[mid][0] <= e)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo && e <= s[lo - 1][1])
            return 0;
        int join_prev = lo && s[lo - 1][1] + 1 == e;
        int join_next = lo < n && e + 1 == s[lo][0];
        if (join_prev && join_next) {
            s[lo - 1][1] = s[lo][1];
            memmove(&s[lo], &s[lo + 1], (n - lo - 1) * sizeof *s);
            t->nsummaries--;
            return 1;
        }
        if (join_prev || join_next) {
            if (join_prev)
                s[lo - 1][1] = e;
            else
                s[lo][0] = e;
            return 1;
        }
        churn_reserve(&t->summaries, &t->summaries_cap, n + 1, sizeof *t->summaries);
        s = t->summaries;
        memmove(&s[lo + 1], &s[lo], (n - lo) * sizeof *s);
        s[lo][0] = s[lo][1] = e;
        t->nsummaries++;
        return 1;
    }
    churn_reserve(&t->summaries, &t->summaries_cap, n + 1, sizeof *t->summaries);
    t->summaries[n][0] = t->summaries[n][1] = e;
    t->nsummaries++;
    return 1;
}

churn_epoch_row *churn_epochs_summary(churn_epochs *t, const churn_epoch_summary *s)
{
    if (!note_summary(t, s->epoch))
        return NULL;
    churn_epoch_row *r = churn_epochs_row(t, s->epoch);
    if (!r->has_summary || s->epoch >= r->summary_epoch) {
        r->summary_epoch = s->epoch;
        r->rss_bytes = s->rss_bytes;
        r->s_live_count = s->live_count;
        r->s_live_bytes = s->live_bytes;
        r->mapped_bytes = 0;
        r->at_summary_count = r->at_summary_bytes = 0;
        churn_reserve(&t->counters, &t->counters_cap, t->ncounters + s->n_counters,
                      sizeof *t->counters);
        if (s->n_counters)
            memcpy(t->counters + t->ncounters, s->counters, s->n_counters * sizeof *s->counters);
        r->counters_first = t->ncounters;
        r->n_counters = s->n_counters;
        t->ncounters += s->n_counters;
        if (r->shift) {
            r->counters_stale = 0;
            r->counters_age_ns = 0;
        }
    }
    if (!r->has_summary || s->start_ns < r->start_ns)
        r->start_ns = s->start_ns;
    r->wall_min = r->has_summary && r->wall_min < s->wall_ns ? r->wall_min : s->wall_ns;
    r->wall_max = r->has_summary && r->wall_max > s->wall_ns ? r->wall_max : s->wall_ns;
    r->rss_min = r->has_summary && r->rss_min < s->rss_bytes ? r->rss_min : s->rss_bytes;
    r->rss_max = r->has_summary && r->rss_max > s->rss_bytes ? r->rss_max : s->rss_bytes;
    r->wall_ns += s->wall_ns;
    r->cpu_ns += s->cpu_ns;
    r->late_events += s->late_events;
    r->s_allocs += s->allocs;
    r->s_frees += s->frees;
    r->s_alloc_bytes += s->alloc_bytes;
    r->s_free_bytes += s->free_bytes;
    r->n_summary++;
    r->has_summary = 1;
    if (r->sealed) { /* a summary later than the lag: its epoch's point joins the fits now */
        churn_fit_add_constant(&t->fits.rss, s->epoch, s->epoch, (double)s->rss_bytes);
        churn_fit_add_constant(&t->fits.wall, s->epoch, s->epoch, (double)s->wall_ns);
    }
    return r;
}

static void put_live(churn_epoch_row *r, uint64_t epoch, int64_t count, int64_t bytes,
                     int64_t usable)
{
    if (r->shift == 0 && !r->sealed) { /* one epoch: its value, set again or not */
        r->n_live = 0;
        r->live_sum = 0;
        r->has_live = 0;
    }
    if (!r->has_live || epoch >= r->live_epoch) {
        r->live_count = count;
        r->live_bytes = bytes;
        r->live_usable_bytes = usable;
        r->live_epoch = epoch;
    }
    r->live_min = r->has_live && r->live_min < bytes ? r->live_min : bytes;
    r->live_max = r->has_live && r->live_max > bytes ? r->live_max : bytes;
    r->live_sum += (double)bytes;
    r->n_live++;
    r->has_live = 1;
}

void churn_epochs_set_live(churn_epochs *t, uint64_t epoch, int64_t count, int64_t bytes,
                           int64_t usable)
{
    churn_epoch_row *r = churn_epochs_row(t, epoch);
    put_live(r, epoch, count, bytes, usable);
    if (r->sealed)
        churn_fit_add_constant(&t->fits.live, epoch, epoch, (double)bytes);
}

void churn_epochs_fill_live(churn_epochs *t, int from_start, uint64_t after, uint64_t before,
                            int64_t count, int64_t bytes, int64_t usable)
{
    for (size_t i = t->count; i-- > 0;) {
        churn_epoch_row *r = &t->rows[i];
        if (r->sealed || (!t->unsorted && !from_start && r->last <= after))
            break;
        if (!r->has_live && r->epoch < before && (from_start || r->epoch > after))
            put_live(r, r->epoch, count, bytes, usable);
    }
}

void churn_epochs_finish(churn_epochs *t, uint64_t last_epoch)
{
    churn_epochs_sort(t);
    for (size_t i = 0; i < t->count; i++) {
        churn_epoch_row *r = &t->rows[i];
        if (r->sealed)
            continue;
        if (r->epoch <= last_epoch) {
            seal(t, r, i == 0);
        } else { /* the exit's tail: kept out of the fits, as the growth fits do */
            churn_epoch_fits saved = t->fits;
            seal(t, r, i == 0);
            t->fits = saved;
        }
    }
    if (t->shift) {
        merge_pass(t, t->shift, UINT64_MAX);
        compact_counters(t);
    }
}

void churn_epochs_free(churn_epochs *t)
{
    free(t->rows);
    free(t->counters);
    free(t->summaries);
    free(t->index);
    for (int k = 0; k < 2; k++)
        free(t->kept_counters[k]);
    memset(t, 0, sizeof *t);
}
