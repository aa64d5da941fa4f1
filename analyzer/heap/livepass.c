#include "heap/livepass.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/util.h"

static void evicted(void *ctx, const churn_object *o)
{
    churn_spans_remove(ctx, o);
}

void churn_live_pass_init(churn_live_pass *p, int has_last, uint64_t last, churn_spans *spans)
{
    memset(p, 0, sizeof *p);
    p->has_last = has_last;
    p->last = last;
    p->spans = spans;
    churn_liveset_init(&p->live);
    churn_early_init(&p->early);
    if (spans) {
        p->live.evicted = evicted;
        p->live.evicted_ctx = spans;
    }
}

void churn_live_pass_free(churn_live_pass *p)
{
    churn_liveset_free(&p->live);
    churn_early_free(&p->early);
    free(p->torn);
    free(p->torn_prev);
}

static void torn_add(churn_live_pass *p, const churn_object *o)
{
    if (p->torn_full)
        return;
    if (p->ntorn == CHURN_TORN_MAX) {
        p->torn_full = 1;
        return;
    }
    churn_reserve(&p->torn, &p->torn_cap, p->ntorn + 1, sizeof *p->torn);
    p->torn[p->ntorn++] = *o;
}

/* An epoch ended: its frees become the previous epoch's. */
static void torn_mark(churn_live_pass *p, uint64_t epoch)
{
    churn_object *t = p->torn_prev;
    size_t cap = p->torn_prev_cap;
    /* the buffer of two epochs ago is reused, unless a burst of frees made it large: then
       one teardown-sized epoch does not keep two such buffers for the rest of the pass */
    if (cap > 65536) {
        free(t);
        t = NULL;
        cap = 0;
    }
    p->torn_prev = p->torn;
    p->torn_prev_cap = p->torn_cap;
    p->ntorn_prev = p->ntorn;
    p->torn_prev_full = p->torn_full;
    p->torn = t;
    p->torn_cap = cap;
    p->ntorn = 0;
    p->torn_full = 0;
    p->marked = epoch;
    p->has_marked = 1;
}

int churn_live_pass_torn(const churn_live_pass *p, uint64_t last, const churn_object **objs,
                         size_t *n)
{
    *objs = NULL;
    *n = 0;
    if (!p->spans)
        return 0;
    /* frees after the newest mark are the last epoch's when that mark ended an earlier one */
    if (!p->has_marked || p->marked < last) {
        *objs = p->torn;
        *n = p->ntorn;
        return !p->torn_full;
    }
    if (p->marked == last && !p->ntorn) {
        *objs = p->torn_prev;
        *n = p->ntorn_prev;
        return !p->torn_prev_full;
    }
    return 0;
}

static void count_unmatched(churn_live_pass *p, const churn_object *freed)
{
    p->unmatched_frees++;
    p->unmatched_bytes += freed->size;
}

static void on_free(churn_live_pass *p, const churn_object *freed)
{
    churn_object removed;
    switch (churn_liveset_remove(&p->live, freed, &removed)) {
    case CHURN_FREE_MATCHED:
    case CHURN_FREE_DISPLACED:
        if (p->spans) {
            churn_spans_remove(p->spans, &removed);
            torn_add(p, &removed);
        }
        break;
    case CHURN_FREE_MISMATCHED:
        p->mismatched_frees++;
        if (p->spans) {
            churn_spans_remove(p->spans, &removed);
            torn_add(p, &removed);
        }
        break;
    case CHURN_FREE_UNMATCHED:
        if (!churn_early_put(&p->early, freed))
            count_unmatched(p, freed);
        break;
    }
}

static void settled(void *ctx, const churn_object *o)
{
    count_unmatched(ctx, o);
}

void churn_live_pass_settle(churn_live_pass *p)
{
    churn_early_drain(&p->early, settled, p);
}

/* The decoder leaves out frees after the window's end and frees of address 0, and vacates
   only for allocations inside it; an insertion after the end is skipped here. */
void churn_live_pass_apply(churn_live_pass *p, const churn_live_ops *ops)
{
    for (size_t i = 0; i < ops->len; i++) {
        const churn_object *o = &ops->objects[i];
        switch (ops->kinds[i]) {
        case CHURN_LIVE_INSERT:
            if (p->has_last && o->epoch > p->last)
                break;
            if (p->early.count && churn_early_cancel(&p->early, o))
                break;
            churn_liveset_insert(&p->live, o);
            if (p->spans)
                churn_spans_add(p->spans, o);
            break;
        case CHURN_LIVE_REMOVE:
            on_free(p, o);
            break;
        case CHURN_LIVE_VACATE:
            churn_liveset_vacate(&p->live, o->addr);
            break;
        case CHURN_LIVE_EPOCH:
            if (p->spans && !(p->has_last && o->epoch > p->last)) {
                churn_spans_snapshot(p->spans, o->epoch);
                torn_mark(p, o->epoch);
            }
            break;
        case CHURN_LIVE_ARENA:
            if (p->spans)
                churn_spans_arena(p->spans, o->addr, o->size, o->epoch);
            break;
        }
    }
}
