#include "livepass.h"

#include <string.h>

#include "churn/format.h"

void churn_live_pass_init(churn_live_pass *p, int has_last, uint64_t last)
{
    memset(p, 0, sizeof *p);
    p->has_last = has_last;
    p->last = last;
    churn_live_init(&p->live);
}

void churn_live_pass_free(churn_live_pass *p)
{
    churn_live_free(&p->live);
}

/* The same events the analysis counts: inside the window's end, at a non-null address. */
static int applies(const churn_live_pass *p, const churn_record *r, uint64_t addr)
{
    return addr != 0 && !(p->has_last && r->epoch > p->last);
}

static void on_free(churn_live_pass *p, const churn_record *r)
{
    uint64_t age = r->u.free.age > r->epoch ? r->epoch : r->u.free.age;
    churn_object freed = {r->u.free.addr, r->u.free.size, r->u.free.stack, r->epoch - age};
    churn_object removed;
    switch (churn_live_remove(&p->live, &freed, &removed)) {
    case CHURN_FREE_MATCHED:
    case CHURN_FREE_DISPLACED:
        break;
    case CHURN_FREE_MISMATCHED:
        p->mismatched_frees++;
        break;
    case CHURN_FREE_UNMATCHED:
        p->unmatched_frees++;
        p->unmatched_bytes += freed.size;
        break;
    }
}

void churn_live_pass_record(void *ctx, const churn_record *r)
{
    churn_live_pass *p = ctx;
    if (r->tag == CHURN_REC_ALLOC) {
        if (applies(p, r, r->u.alloc.addr)) {
            churn_object o = {r->u.alloc.addr, r->u.alloc.size, r->u.alloc.stack, r->epoch};
            churn_live_insert(&p->live, &o);
        }
    } else if (r->tag == CHURN_REC_FREE) {
        if (applies(p, r, r->u.free.addr))
            on_free(p, r);
    }
}
