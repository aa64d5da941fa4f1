#include "heap/spans.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

void churn_spans_init(churn_spans *s, const churn_model *m)
{
    memset(s, 0, sizeof *s);
    s->model = *m;
    s->mask = 4095;
    s->shift = 64 - 12;
    s->slots = churn_xcalloc(s->mask + 1, sizeof *s->slots);
}

void churn_spans_free(churn_spans *s)
{
    free(s->arenas);
    free(s->slots);
    free(s->snaps);
    memset(s, 0, sizeof *s);
}

/* Units are page-aligned: the multiply spreads their high bits. */
static inline size_t home_of(const churn_spans *s, uint64_t key)
{
    return (size_t)(((key >> 4) * 0x9e3779b97f4a7c15u) >> s->shift);
}

static inline size_t probe(const churn_spans *s, uint64_t key)
{
    size_t i = home_of(s, key);
    while (s->slots[i].key && s->slots[i].key != key)
        i = (i + 1) & s->mask;
    return i;
}

static void grow(churn_spans *s)
{
    churn_span *old = s->slots;
    size_t n = s->mask + 1;
    s->slots = churn_xcalloc(n * 2, sizeof *s->slots);
    s->mask = n * 2 - 1;
    s->shift--;
    for (size_t i = 0; i < n; i++)
        if (old[i].key)
            s->slots[probe(s, old[i].key)] = old[i];
    free(old);
}

/* Backward-shift deletion, as in live.c: no tombstones however long the trace. */
static void delete_slot(churn_spans *s, size_t i)
{
    size_t j = i;
    for (;;) {
        j = (j + 1) & s->mask;
        if (!s->slots[j].key)
            break;
        size_t home = home_of(s, s->slots[j].key);
        if (((j - home) & s->mask) >= ((j - i) & s->mask)) {
            s->slots[i] = s->slots[j];
            i = j;
        }
    }
    s->slots[i].key = 0;
}

/* Key 0 marks an empty slot; a unit at address 0 (never a heap) is filed under the top. */
static inline uint64_t key_of(uint64_t key)
{
    return key ? key : UINT64_MAX;
}

/* ---- arenas ---- */

/* The first arena whose end is past addr. */
static size_t arena_after(const churn_spans *s, uint64_t addr)
{
    size_t lo = 0, hi = s->narenas;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->arenas[mid].hi <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void churn_spans_arena(churn_spans *s, uint64_t addr, uint64_t len, uint64_t unit)
{
    if (!len || addr + len < addr)
        return;
    /* whatever the range overlapped is no longer an arena */
    size_t i = arena_after(s, addr), j = i;
    while (j < s->narenas && s->arenas[j].lo < addr + len)
        j++;
    if (j > i) {
        memmove(&s->arenas[i], &s->arenas[j], (s->narenas - j) * sizeof *s->arenas);
        s->narenas -= j - i;
    }
    if (!unit)
        return;
    churn_reserve(&s->arenas, &s->arenas_cap, s->narenas + 1, sizeof *s->arenas);
    memmove(&s->arenas[i + 1], &s->arenas[i], (s->narenas - i) * sizeof *s->arenas);
    s->arenas[i] = (churn_arena){addr, addr + len, unit};
    s->narenas++;
}

/* Where an object sits: in its arena's unit, or where the model says (by_model). */
static void place(const churn_spans *s, uint64_t addr, uint64_t usable, int by_model,
                  churn_placement *pl)
{
    if (!by_model && s->narenas && s->model.kind != CHURN_MODEL_NONE) {
        size_t i = arena_after(s, addr);
        if (i < s->narenas && s->arenas[i].lo <= addr) {
            uint64_t unit = s->arenas[i].unit;
            pl->n = 1;
            pl->owned = 0;
            pl->key[0] = addr - addr % unit;
            pl->span_bytes[0] = unit;
            pl->weight[0] = usable;
            return;
        }
    }
    churn_model_place(&s->model, addr, usable, pl);
}

/* ---- occupancy ---- */

void churn_spans_add(churn_spans *s, const churn_object *o)
{
    uint64_t usable = o->size + o->slack;
    churn_placement pl;
    place(s, o->addr, usable, 0, &pl);
    for (int k = 0; k < pl.n; k++) {
        if ((s->used + 1) * 2 > s->mask + 1)
            grow(s);
        uint64_t key = key_of(pl.key[k]);
        churn_span *u = &s->slots[probe(s, key)];
        if (!u->key) {
            *u = (churn_span){key, pl.span_bytes[k], 0, 0};
            s->used++;
            s->span_bytes += u->span_bytes;
        }
        u->count++;
        u->weight += pl.weight[k];
    }
    s->span_bytes += pl.owned;
    s->live_count++;
    s->live_bytes += o->size;
    s->live_usable += usable;
}

/* The arenas an object's addition saw may not be the ones now (an arena's record written
   after an object another thread allocated in it): the units it took are the model's when
   the arena's are not there. */
static void placed(const churn_spans *s, uint64_t addr, uint64_t usable, churn_placement *pl)
{
    place(s, addr, usable, 0, pl);
    if (!s->narenas)
        return;
    for (int k = 0; k < pl->n; k++)
        if (!s->slots[probe(s, key_of(pl->key[k]))].key) {
            place(s, addr, usable, 1, pl);
            return;
        }
}

void churn_spans_remove(churn_spans *s, const churn_object *o)
{
    uint64_t usable = o->size + o->slack;
    churn_placement pl;
    placed(s, o->addr, usable, &pl);
    for (int k = 0; k < pl.n; k++) {
        size_t i = probe(s, key_of(pl.key[k]));
        churn_span *u = &s->slots[i];
        if (!u->key)
            continue; /* cannot happen for an object that was added */
        u->weight -= pl.weight[k];
        if (--u->count == 0) {
            s->span_bytes -= u->span_bytes;
            s->used--;
            delete_slot(s, i);
        }
    }
    s->span_bytes -= pl.owned;
    s->live_count--;
    s->live_bytes -= o->size;
    s->live_usable -= usable;
}

static int64_t pinned_of(const churn_span_snapshot *snap)
{
    return (int64_t)(snap->span_bytes - snap->live_usable);
}

uint64_t churn_span_snapshot_most_pinned(const churn_span_snapshot *snap, int64_t *pinned)
{
    *pinned = pinned_of(snap);
    if (snap->pinned_epoch == UINT64_MAX || snap->pinned_max < *pinned)
        return snap->epoch;
    *pinned = snap->pinned_max;
    return snap->pinned_epoch;
}

/* b, a later bucket's snapshot, into a: a's end becomes one of the epochs before the end. */
static void fold(churn_span_snapshot *a, const churn_span_snapshot *b)
{
    int64_t pinned;
    uint64_t at = churn_span_snapshot_most_pinned(a, &pinned);
    if (b->pinned_epoch != UINT64_MAX && b->pinned_max > pinned) {
        pinned = b->pinned_max;
        at = b->pinned_epoch;
    }
    uint64_t first = a->first;
    *a = *b;
    a->first = first;
    a->pinned_max = pinned;
    a->pinned_epoch = at;
}

/* Doubles the width until a quarter of the snapshots is free; the first stays alone. */
static void merge(churn_spans *s)
{
    while (s->nsnaps * 4 > CHURN_SPAN_SNAPSHOTS * 3 && s->snap_shift < 63) {
        s->snap_shift++;
        size_t n = s->nsnaps > 1 ? 2 : s->nsnaps;
        for (size_t i = 2; i < s->nsnaps; i++) {
            churn_span_snapshot *prev = &s->snaps[n - 1];
            if (n > 1 && prev->epoch >> s->snap_shift == s->snaps[i].epoch >> s->snap_shift)
                fold(prev, &s->snaps[i]);
            else
                s->snaps[n++] = s->snaps[i];
        }
        s->nsnaps = n;
    }
}

void churn_spans_snapshot(churn_spans *s, uint64_t epoch)
{
    if (s->has_first && epoch < s->first)
        return;
    churn_span_snapshot snap = {epoch, s->live_count, s->live_bytes, s->live_usable,
                                s->span_bytes, s->used, epoch, 0, UINT64_MAX};
    churn_span_snapshot *last = s->nsnaps ? &s->snaps[s->nsnaps - 1] : NULL;
    if (last && last->epoch == epoch) {
        snap.first = last->first;
        snap.pinned_max = last->pinned_max;
        snap.pinned_epoch = last->pinned_epoch;
        *last = snap;
        return;
    }
    if (!s->keep_all && s->nsnaps >= CHURN_SPAN_SNAPSHOTS) {
        merge(s); /* keeps the last snapshot's epoch */
        last = &s->snaps[s->nsnaps - 1];
    }
    if (last && s->nsnaps > 1 && s->snap_shift &&
        last->epoch >> s->snap_shift == epoch >> s->snap_shift) {
        fold(last, &snap);
        return;
    }
    churn_reserve(&s->snaps, &s->snaps_cap, s->nsnaps + 1, sizeof *s->snaps);
    s->snaps[s->nsnaps++] = snap;
}

const churn_span *churn_spans_find(const churn_spans *s, uint64_t key)
{
    const churn_span *u = &s->slots[probe(s, key_of(key))];
    return u->key ? u : NULL;
}

double churn_spans_share(const churn_spans *s, const churn_object *o)
{
    churn_placement pl;
    placed(s, o->addr, o->size + o->slack, &pl);
    double share = (double)pl.owned;
    for (int k = 0; k < pl.n; k++) {
        const churn_span *u = churn_spans_find(s, pl.key[k]);
        if (u && u->weight)
            share += (double)u->span_bytes * (double)pl.weight[k] / (double)u->weight;
    }
    return share;
}
