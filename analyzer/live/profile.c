#include "live/profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "export/pprof.h"

static int cmp_sites(const void *x, const void *y)
{
    const struct churn_profile_site *a = x, *b = y;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

int churn_profile_base_take(churn_follow *f, churn_profile_base *b)
{
    memset(b, 0, sizeof *b);
    const churn_analysis *a = churn_follow_analysis(f);
    if (!a)
        return -1;
    b->restarts = churn_follow_restarts(f);
    b->sites = churn_xcalloc(a->growth.count ? a->growth.count : 1, sizeof *b->sites);
    for (size_t i = 0; i < a->growth.count; i++) {
        const churn_callsite *s = &a->growth.sites[i];
        b->sites[b->n++] =
            (struct churn_profile_site){s->stack, (int64_t)s->allocs, (int64_t)s->alloc_bytes,
                                        s->live_count, s->live_bytes};
    }
    qsort(b->sites, b->n, sizeof *b->sites, cmp_sites);
    return 0;
}

void churn_profile_base_free(churn_profile_base *b)
{
    free(b->sites);
    memset(b, 0, sizeof *b);
}

/* The metrics of a delta profile read the base of the profile being written: one at a time,
   on the follower's thread (the metric table's functions take no context). */
static const churn_profile_base *delta_base;

static int by_stack(const void *key, const void *item)
{
    uint64_t k = *(const uint64_t *)key;
    const struct churn_profile_site *s = item;
    return k < s->stack ? -1 : k > s->stack;
}

static const struct churn_profile_site *base_of(const churn_export_window *w, size_t i)
{
    static const struct churn_profile_site none;
    uint64_t stack = w->a->growth.sites[i].stack;
    const struct churn_profile_site *s =
        bsearch(&stack, delta_base->sites, delta_base->n, sizeof *s, by_stack);
    return s ? s : &none;
}

static int64_t d_allocs(const churn_export_window *w, size_t i)
{
    return (int64_t)w->a->growth.sites[i].allocs - base_of(w, i)->allocs;
}

static int64_t d_alloc_bytes(const churn_export_window *w, size_t i)
{
    return (int64_t)w->a->growth.sites[i].alloc_bytes - base_of(w, i)->alloc_bytes;
}

static int64_t d_live_count(const churn_export_window *w, size_t i)
{
    return w->a->growth.sites[i].live_count - base_of(w, i)->live_count;
}

static int64_t d_live_bytes(const churn_export_window *w, size_t i)
{
    return w->a->growth.sites[i].live_bytes - base_of(w, i)->live_bytes;
}

static const churn_metric delta_metrics[] = {
    {"allocs", "allocations", "objects", "alloc_objects", d_allocs, NULL},
    {"alloc_bytes", "allocated bytes", "bytes", "alloc_space", d_alloc_bytes, NULL},
    {"live_count", "live objects", "objects", "inuse_objects", d_live_count, NULL},
    {"live_bytes", "live bytes", "bytes", "inuse_space", d_live_bytes, NULL},
};

int churn_profile_write(churn_follow *f, int allocs, const churn_profile_base *base, FILE *out,
                        char *err, size_t errlen)
{
    churn_analysis *a = churn_follow_analysis(f);
    if (!a) {
        snprintf(err, errlen, "nothing read yet: %s", churn_follow_why(f));
        return -1;
    }
    if (base && base->restarts != churn_follow_restarts(f)) {
        snprintf(err, errlen, "segments were lost during the delta: the state started over");
        return -1;
    }
    /* Go's order of sample types */
    const churn_metric *metrics[4];
    if (base) {
        for (size_t m = 0; m < 4; m++)
            metrics[m] = &delta_metrics[m];
    } else {
        static const char *const names[] = {"allocs", "alloc_bytes", "live_count",
                                            "live_bytes"};
        for (size_t m = 0; m < 4; m++)
            metrics[m] = churn_metric_find(names[m]);
    }
    churn_pprof_label labels[] = {{"pid", NULL, (int64_t)a->info->pid},
                                  {"executable", churn_follow_exe(f), 0}};
    churn_pprof_options o = {metrics,      4,      allocs ? "alloc_space" : "inuse_space",
                             base != NULL, labels, churn_follow_exe(f)[0] ? 2 : 1};
    churn_export_window w = {.a = a};
    delta_base = base;
    int rc = churn_export_pprof_with(out, &w, &o);
    delta_base = NULL;
    if (rc != 0)
        snprintf(err, errlen, "writing the profile failed: %s", strerror(errno));
    return rc;
}
