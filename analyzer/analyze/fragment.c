#include "analyze/fragment.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analysis.h"
#include "base/util.h"

/* ---- choosing the model ---- */

typedef struct peek_state {
    int found;
    char name[128];
    uint64_t page;
} peek_state;

static void peek_record(void *ctx, const churn_record *r)
{
    peek_state *s = ctx;
    if (r->tag != CHURN_REC_ALLOCATOR || s->found)
        return;
    s->found = 1;
    snprintf(s->name, sizeof s->name, "%s", r->u.allocator.name);
    s->page = r->u.allocator.page_size;
}

static void discard_ops(void *ctx)
{
    ((churn_live_ops *)ctx)->len = 0;
}

/* Every segment opens with its allocator record, so the first few KiB of the first one tell
   the model before the pass that needs it begins. */
#define PEEK_BYTES 16384

int churn_fragment_model(churn_trace *t, const char *option, churn_model *m, int *from_option,
                         char *err, size_t errlen)
{
    *from_option = option != NULL;
    if (option) {
        if (churn_model_parse(option, m))
            return 1;
        snprintf(err, errlen,
                 "--model: unknown allocator model '%s' (none, page[:BYTES], glibc, gperftools, "
                 "tcmalloc, jemalloc[:PAGE])",
                 option);
        return 0;
    }
    memset(m, 0, sizeof *m);
    if (!churn_trace_segments(t))
        return 1;
    uint8_t *buf = churn_xmalloc(PEEK_BYTES);
    size_t len = churn_trace_peek(t, 0, buf, PEEK_BYTES);
    churn_object objects[256];
    uint8_t kinds[256];
    churn_live_ops ops = {objects, kinds, 0, 256, 0};
    churn_live_sink sink = {.chunk = &ops, .full = discard_ops, .ctx = &ops};
    churn_decoder d = {.version = churn_trace_info_of(t)->version};
    peek_state s = {0};
    size_t bad_off;
    unsigned bad_tag;
    /* the stream is cut short here: what matters is that the allocator record came first */
    churn_decode_records(&d, buf, len, peek_record, &s, &sink, &bad_off, &bad_tag);
    churn_decoder_free(&d);
    free(buf);
    if (s.found)
        churn_model_for_allocator(s.name, s.page, m);
    return 1;
}

/* ---- the allocator's books ---- */

typedef struct books {
    enum churn_books kind;
    int idx[4];  /* counter indices, meaning per kind (see read_books) */
    int dirty_pages; /* idx[1] counts the free resident pages */
    uint64_t page;
    /* counter index of the bytes a traced runtime allocator maps beside the main one
       (CPython's pymalloc arenas), -1 for none */
    int beside;
} books;

static int counter_index(char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], name))
            return (int)i;
    return -1;
}

/* The counters each allocator's books are read from, in the order read_books uses. */
static const struct {
    enum churn_books kind;
    int dirty_pages;
    const char *names[4];
} book_names[] = {
    {CHURN_BOOKS_GLIBC, 0, {"mallinfo2.arena", "mallinfo2.hblkhd", "mallinfo2.fordblks", NULL}},
    {CHURN_BOOKS_GPERFTOOLS, 0,
     {"generic.total_physical_bytes", "tcmalloc.pageheap_free_bytes", NULL, NULL}},
    {CHURN_BOOKS_TCMALLOC, 0,
     {"generic.physical_memory_used", "tcmalloc.page_heap_free", NULL, NULL}},
    /* jemalloc's resident = its metadata's resident pages + active + dirty pages */
    {CHURN_BOOKS_JEMALLOC, 1, {"stats.resident", "stats.arenas.4096.pdirty", NULL, NULL}},
    /* a jemalloc without the merged arena's pdirty (4.x): metadata stands for its resident
       part, which counts its internal allocations twice (active holds them too) */
    {CHURN_BOOKS_JEMALLOC, 0, {"stats.resident", "stats.active", "stats.metadata", NULL}},
};

static books find_books(char *const *names, size_t n, uint64_t page)
{
    int beside = counter_index(names, n, "pymalloc.arena_bytes");
    for (size_t b = 0; b < sizeof book_names / sizeof *book_names; b++) {
        books k = {.kind = book_names[b].kind,
                   .idx = {-1, -1, -1, -1},
                   .dirty_pages = book_names[b].dirty_pages,
                   .page = page,
                   .beside = beside};
        int all = 1;
        for (int i = 0; i < 4 && book_names[b].names[i]; i++)
            all &= (k.idx[i] = counter_index(names, n, book_names[b].names[i])) >= 0;
        if (all)
            return k;
    }
    return (books){CHURN_BOOKS_NONE, {-1, -1, -1, -1}, 0, page, beside};
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

/* heap: what the allocator holds in memory; free: what of it is free but resident.
   glibc has no resident figure: its mapped heap stands in, and its free chunk bytes outside
   the pages that hold live objects are the free part (docs/fragmentation.md). */
static int read_main_books(const books *k, const uint64_t *v, size_t n, const churn_frag_row *f,
                           uint64_t *heap, uint64_t *free_resident);

/* The main allocator's books, and the arenas of a runtime allocator traced beside it, whose
   objects are in the live set too: they are counted in use (their free blocks are in the
   residual). */
static int read_books(const books *k, const uint64_t *v, size_t n, const churn_frag_row *f,
                      uint64_t *heap, uint64_t *free_resident)
{
    if (!read_main_books(k, v, n, f, heap, free_resident))
        return 0;
    if (k->beside >= 0 && k->beside < (int)n)
        *heap += v[k->beside];
    return 1;
}

static int read_main_books(const books *k, const uint64_t *v, size_t n, const churn_frag_row *f,
                           uint64_t *heap, uint64_t *free_resident)
{
    for (int i = 0; i < 4; i++)
        if (k->idx[i] >= (int)n)
            return 0;
    switch (k->kind) {
    case CHURN_BOOKS_NONE:
        return 0;
    case CHURN_BOOKS_GLIBC:
        *heap = v[k->idx[0]] + v[k->idx[1]];
        *free_resident = sub0(v[k->idx[2]], f->pinned_bytes > 0 ? (uint64_t)f->pinned_bytes : 0);
        return 1;
    case CHURN_BOOKS_GPERFTOOLS:
    case CHURN_BOOKS_TCMALLOC:
        *heap = v[k->idx[0]];
        *free_resident = v[k->idx[1]];
        return 1;
    case CHURN_BOOKS_JEMALLOC:
        *heap = v[k->idx[0]];
        *free_resident = k->dirty_pages ? v[k->idx[1]] * k->page
                                        : sub0(v[k->idx[0]], v[k->idx[1]] + v[k->idx[2]]);
        return 1;
    }
    return 0;
}

static void fill_row(churn_frag_row *f, const churn_span_snapshot *s, const churn_epochs *t,
                     const books *k, int carried, int own_counter)
{
    memset(f, 0, sizeof *f);
    f->epoch = s->epoch;
    f->slack_bytes = s->live_usable - s->live_bytes;
    f->pinned_bytes = (int64_t)(s->span_bytes - s->live_usable);
    f->span_bytes = s->span_bytes;
    f->spans = s->spans;
    const churn_epoch_row *row = churn_epochs_lookup(t, s->epoch);
    /* The trace's live count at this epoch's end holds the carried objects; the model's only
       those it placed.  Compared only at the row's own epoch (a wider row's live value is of
       its newest epoch) and only when something was carried: otherwise the two are one. */
    if (carried && row && row->has_live && row->live_epoch == s->epoch) {
        if (row->live_count > (int64_t)s->live_count)
            f->unplaced_count = (uint64_t)row->live_count - s->live_count;
        if (row->live_bytes > (int64_t)s->live_bytes)
            f->unplaced_bytes = (uint64_t)row->live_bytes - s->live_bytes;
    }
    f->live_count = s->live_count + f->unplaced_count;
    f->live_bytes = s->live_bytes + f->unplaced_bytes;
    /* what the live set occupies, as far as the trace can tell */
    uint64_t occupied = s->span_bytes + f->unplaced_bytes;
    if (!row || !row->has_summary)
        return;
    f->row = row;
    f->mapped_bytes = row->mapped_bytes;
    f->has_rss = row->rss_bytes != 0;
    f->rss_bytes = row->rss_bytes;
    f->has_books = read_books(k, churn_epochs_counters(t, row), row->n_counters, f,
                              &f->heap_bytes, &f->free_resident_bytes);
    /* The shim says these are an earlier reading (COUNTERS_STALE: the exit path never asks
       the allocator): the heap they describe is not the epoch's end. */
    if (row->counters_stale) {
        f->has_books = 0;
        f->free_resident_bytes = 0;
    }
    /* Fresh books count in use at least the usable bytes of the live objects the trace
       knows (every one of them is inside the allocator's heap; objects from before tracing
       only add).  Books that count less were read when the heap was another than at the
       epoch's end (the writer reads them when it closes the epoch, after it ended), and
       subtracting them would make up a negative residual. */
    int64_t in_use = (int64_t)(f->heap_bytes - f->free_resident_bytes);
    if (f->has_books && k->kind == CHURN_BOOKS_GLIBC) /* its free chunks, pinned ones too */
        in_use = (int64_t)(f->heap_bytes - t->counters[row->counters_first + k->idx[2]]);
    if (f->has_books && in_use < (int64_t)(s->live_usable + f->unplaced_bytes)) {
        f->books_stale = 1;
        f->stale_in_use_bytes = in_use;
        f->has_books = 0;
        f->free_resident_bytes = 0;
    }
    /* RSS is read at the tick and the books when the writer closes the epoch, later: books
       that hold more than the process's RSS less libchurn's own memory saw a growth that the
       RSS reading had not. */
    uint64_t own = 0;
    churn_frag_counter_at(own_counter, row, t, &own);
    if (f->has_books && f->has_rss && f->heap_bytes + own > f->rss_bytes) {
        f->books_stale = 1;
        f->stale_in_use_bytes = in_use;
        f->has_books = 0;
        f->free_resident_bytes = 0;
    }
    if (!f->has_books) /* without books the heap is what the live set occupies */
        f->heap_bytes = occupied;
    /* The live set at the epoch's end sits in pages RSS had not counted yet: the RSS reading
       is the older one, and what lies outside the heap cannot be told at this epoch. */
    /* RSS is read up to 1 ms before the epoch's end: the live set's spans can pass it by what
       the epoch allocated, at most a 4 KiB page past each allocation's bytes.  By more, they
       hold pages never touched (a large allocation not yet written: memcached -L's
       preallocated slabs), which RSS does not count: no reading's age explains it. */
    uint64_t could_grow = row->alloc_bytes + (row->allocs + 1) * 4096;
    int untouched = f->has_rss && occupied > f->rss_bytes &&
                    occupied - f->rss_bytes > could_grow;
    f->not_resident = untouched;
    f->rss_stale = !untouched && f->has_rss && f->heap_bytes > f->rss_bytes;
    f->outside_heap_bytes = f->rss_stale || untouched ? 0 : (int64_t)(f->rss_bytes - f->heap_bytes);
    f->residual_bytes = (int64_t)(f->heap_bytes - occupied - f->free_resident_bytes);
}

/* ---- survivors per callsite and per size ---- */

typedef struct parts {
    churn_frag_part *items;
    size_t count, cap;
    size_t *slots; /* open addressing: index + 1 */
    size_t mask;
} parts;

static churn_frag_part *part_of(parts *p, uint64_t key)
{
    if ((p->count + 1) * 2 > p->mask + 1) {
        size_t n = p->mask ? (p->mask + 1) * 2 : 256;
        free(p->slots);
        p->slots = churn_xcalloc(n, sizeof *p->slots);
        p->mask = n - 1;
        for (size_t i = 0; i < p->count; i++) {
            size_t h = (size_t)(p->items[i].key * 0x9e3779b97f4a7c15u) & p->mask;
            while (p->slots[h])
                h = (h + 1) & p->mask;
            p->slots[h] = i + 1;
        }
    }
    size_t h = (size_t)(key * 0x9e3779b97f4a7c15u) & p->mask;
    while (p->slots[h] && p->items[p->slots[h] - 1].key != key)
        h = (h + 1) & p->mask;
    if (!p->slots[h]) {
        churn_reserve(&p->items, &p->cap, p->count + 1, sizeof *p->items);
        p->items[p->count] = (churn_frag_part){.key = key};
        p->slots[h] = ++p->count;
    }
    return &p->items[p->slots[h] - 1];
}

typedef struct survivors {
    const churn_spans *spans;
    const churn_analysis *a;
    parts sites, classes;
} survivors;

/* w: how many objects this one stands for (churn_site_weightf) */
static void add_part(churn_frag_part *p, const churn_object *o, double share, double w)
{
    p->count += churn_scale(w, 1);
    p->live_bytes += churn_scale(w, o->size);
    p->usable_bytes += churn_scale(w, o->size + o->slack);
    p->span_share += share * w;
}

static void survivor(void *ctx, const churn_object *o)
{
    survivors *s = ctx;
    double share = churn_spans_share(s->spans, o);
    double w = churn_site_weightf(s->a, o->stack, o->size);
    if (w != 0)
        add_part(part_of(&s->sites, o->stack), o, share, w);
    add_part(part_of(&s->classes, o->size + o->slack), o, share,
             churn_object_weight(s->a, o->size));
}

static int by_pinned(const void *x, const void *y)
{
    const churn_frag_part *a = x, *b = y;
    double pa = churn_frag_pinned(a), pb = churn_frag_pinned(b);
    if (pa != pb)
        return pa > pb ? -1 : 1;
    return a->key < b->key ? -1 : a->key > b->key;
}

/* The displaced table's objects are live too: they sit in spans like the others. */
static void displaced_survivors(const churn_liveset *l, survivors *s)
{
    for (size_t k = 0; k < l->displaced_count; k++)
        survivor(s, &l->displaced[(l->displaced_head + k) % CHURN_DISPLACED_MAX]);
}

/* Survivors that were there before the teardown epoch began: objects of earlier epochs. */
typedef struct before_ctx {
    survivors *s;
    uint64_t teardown;
    churn_spans *spans;
} before_ctx;

static void before_survivor(void *ctx, const churn_object *o)
{
    before_ctx *b = ctx;
    if (o->epoch < b->teardown)
        survivor(b->s, o);
}

static void drop_teardown_objects(void *ctx, const churn_object *o)
{
    before_ctx *b = ctx;
    if (o->epoch >= b->teardown)
        churn_spans_remove(b->spans, o);
}

/* The spans as they were when the teardown began: its allocations out, what it freed back
   in; then the survivors of that moment, ranked. */
static void rank_before_teardown(churn_fragmentation *f, churn_spans *spans,
                                 const churn_live_pass *p, const churn_analysis *a)
{
    uint64_t teardown = a->last_epoch;
    if (!a->has_exit || a->window.has_last || a->growth.window_last >= teardown)
        return;
    size_t n;
    const churn_object *torn;
    if (!churn_live_pass_torn(p, teardown, &torn, &n))
        return;
    before_ctx b = {NULL, teardown, spans};
    churn_liveset_foreach(&p->live, drop_teardown_objects, &b);
    for (size_t i = 0; i < n; i++)
        if (torn[i].epoch < teardown)
            churn_spans_add(spans, &torn[i]);
    survivors s = {spans, a, {0}, {0}};
    b.s = &s;
    churn_liveset_foreach(&p->live, before_survivor, &b);
    for (size_t i = 0; i < n; i++)
        before_survivor(&b, &torn[i]);
    if (s.sites.count)
        qsort(s.sites.items, s.sites.count, sizeof *s.sites.items, by_pinned);
    f->has_before = 1;
    f->before_epoch = a->growth.window_last;
    f->before_sites = s.sites.items;
    f->nbefore = s.sites.count;
    free(s.sites.slots);
    free(s.classes.items);
    free(s.classes.slots);
}

uint64_t churn_fragment_peak_epoch(const churn_fragmentation *f, uint64_t until)
{
    uint64_t epoch = UINT64_MAX;
    int64_t most = INT64_MIN;
    for (size_t i = 0; i < f->nrows; i++) {
        int64_t pinned;
        const churn_span_snapshot *snap = &f->snaps[i];
        uint64_t at = churn_span_snapshot_most_pinned(snap, &pinned);
        /* the bucket that ends after until (at the exit's teardown) without its end */
        if (at > until && snap->pinned_epoch <= until) {
            at = snap->pinned_epoch;
            pinned = snap->pinned_max;
        }
        if (at <= until && pinned > most) {
            most = pinned;
            epoch = at;
        }
    }
    return epoch;
}

void churn_fragment_take_peak(churn_fragmentation *f, churn_fragmentation *from)
{
    free(f->peak_sites);
    f->has_peak = 1;
    f->peak_epoch = from->nrows ? from->snaps[from->nrows - 1].epoch : 0;
    f->peak_sites = from->sites;
    f->npeak = from->nsites;
    from->sites = NULL;
    from->nsites = 0;
}

/* Says once which epochs' books were not used, with the first one's figures. */
static void stale_books_warning(const churn_fragmentation *f, const churn_analysis *a)
{
    uint64_t n = 0, rss = 0, early = 0, later = 0, untouched = 0;
    churn_frag_row first = {0}, first_rss = {0}, first_early = {0}, first_later = {0};
    churn_frag_row first_untouched = {0}, r;
    for (size_t i = 0; i < f->nrows; i++) {
        churn_frag_row_at(f, i, &r);
        /* books over an RSS that untouched pages keep low are not stale: not_resident says */
        if (r.books_stale && !r.not_resident && !n++)
            first = r;
        if (r.rss_stale && !rss++)
            first_rss = r;
        if (r.not_resident && !untouched++)
            first_untouched = r;
        /* the shim's COUNTERS_STALE outside the exit's epoch, which is never read anew:
           age 0, a reading after a later epoch's end; else one from before this one's */
        if (f->books == CHURN_BOOKS_NONE || !r.row || !r.row->counters_stale ||
            (a->has_exit && r.epoch == a->last_epoch))
            continue;
        if (!r.row->counters_age_ns ? !later++ : !early++)
            *(r.row->counters_age_ns ? &first_early : &first_later) = r;
    }
    if (later)
        churn_warn(a->warn,
                   "allocator counters of %llu epoch(s) read after a later epoch had ended "
                   "(first: epoch %llu): several epochs ended before the writer read them; "
                   "those epochs show no free-resident figure and their heap is the live "
                   "set's spans",
                   (unsigned long long)later, (unsigned long long)first_later.epoch);
    if (early)
        churn_warn(a->warn,
                   "allocator counters not read at the end of %llu epoch(s) (first: epoch %llu, "
                   "whose reading was taken %.3f ms before it ended): the epoch ended faster than "
                   "the writer reads the counters (at most once a millisecond), or the process "
                   "ended while the writer was still behind; those epochs "
                   "show no free-resident figure and their heap is the live set's spans",
                   (unsigned long long)early, (unsigned long long)first_early.epoch,
                   (double)first_early.row->counters_age_ns / 1e6);
    if (rss)
        churn_warn(a->warn,
                   "RSS reading older than the epoch's end at %llu epoch(s) (first: epoch %llu, "
                   "RSS %llu bytes, what the live set occupies %llu): read up to 1 ms before the "
                   "epoch ended, while the heap grew (or pages the epoch allocated were not "
                   "touched yet); those epochs show no outside-the-heap figure", (unsigned long long)rss, (unsigned long long)first_rss.epoch,
                   (unsigned long long)first_rss.rss_bytes,
                   (unsigned long long)(first_rss.span_bytes + first_rss.unplaced_bytes));
    if (untouched)
        churn_warn(a->warn,
                   "RSS below the heap at %llu epoch(s) by more than the epoch allocated "
                   "(first: epoch %llu, RSS %llu bytes, the heap %llu): pages of the heap were "
                   "never touched (allocated, not yet written, as a preallocated pool), which "
                   "RSS does not count; those epochs show no outside-the-heap figure",
                   (unsigned long long)untouched, (unsigned long long)first_untouched.epoch,
                   (unsigned long long)first_untouched.rss_bytes,
                   (unsigned long long)(first_untouched.heap_bytes > first_untouched.span_bytes
                                            ? first_untouched.heap_bytes
                                            : first_untouched.span_bytes));
    if (n)
        churn_warn(a->warn,
                   "allocator counters stale at %llu epoch(s) (first: epoch %llu, where they "
                   "count %lld bytes in use and its live objects hold %llu usable bytes): read "
                   "when the writer closed the epoch, after its end, and the heap had changed; those epochs show no "
                   "free-resident figure and their heap is the live set's spans",
                   (unsigned long long)n, (unsigned long long)first.epoch,
                   (long long)first.stale_in_use_bytes,
                   (unsigned long long)(first.live_bytes + first.slack_bytes));
}

void churn_fragment_build(churn_fragmentation *f, const churn_model *m, int from_option,
                          churn_spans *spans, const churn_live_pass *p,
                          const churn_analysis *a)
{
    memset(f, 0, sizeof *f);
    f->model = *m;
    f->from_option = from_option;
    f->untraced_counter = -1;
    f->own_counter = -1;
    churn_model_set_classes(&f->model, a->class_sizes, a->class_spans, a->n_classes);
    /* a sample of the live objects says nothing of how the others share pages */
    if (!spans || a->sample_bytes)
        return;
    books k = find_books(a->counter_names, a->n_counter_names, a->allocator_page);
    f->untraced_counter = counter_index(a->counter_names, a->n_counter_names,
                                        "libchurn.untraced_bytes");
    f->own_counter = counter_index(a->counter_names, a->n_counter_names,
                                   "libchurn.own_resident_bytes");
    f->books = k.kind;
    memcpy(f->book_counters, k.idx, sizeof k.idx);
    f->books_dirty_pages = k.dirty_pages;
    f->books_page = k.page;
    f->books_beside = k.beside;
    f->carried = a->start_live_count > 0;
    f->epochs = &a->epochs;
    /* the snapshots of epochs before the window go */
    size_t skip = 0;
    while (skip < spans->nsnaps && a->window.has_first && spans->snaps[skip].epoch < a->window.first)
        skip++;
    f->nrows = spans->nsnaps - skip;
    if (skip && f->nrows)
        memmove(spans->snaps, spans->snaps + skip, f->nrows * sizeof *spans->snaps);
    f->snaps = spans->snaps;
    spans->snaps = NULL;
    spans->nsnaps = spans->snaps_cap = 0;
    survivors s = {spans, a, {0}, {0}};
    churn_liveset_foreach(&p->live, survivor, &s);
    displaced_survivors(&p->live, &s);
    if (s.sites.count) {
        qsort(s.sites.items, s.sites.count, sizeof *s.sites.items, by_pinned);
        qsort(s.classes.items, s.classes.count, sizeof *s.classes.items, by_pinned);
    }
    stale_books_warning(f, a);
    f->sites = s.sites.items;
    f->nsites = s.sites.count;
    f->classes = s.classes.items;
    f->nclasses = s.classes.count;
    free(s.sites.slots);
    free(s.classes.slots);
    rank_before_teardown(f, spans, p, a);
}

void churn_frag_row_at(const churn_fragmentation *f, size_t i, churn_frag_row *out)
{
    books k = {.kind = f->books,
               .idx = {f->book_counters[0], f->book_counters[1], f->book_counters[2],
                       f->book_counters[3]},
               .dirty_pages = f->books_dirty_pages,
               .page = f->books_page,
               .beside = f->books_beside};
    fill_row(out, &f->snaps[i], f->epochs, &k, f->carried, f->own_counter);
    out->has_untraced = churn_frag_counter_at(f->untraced_counter, out->row, f->epochs,
                                          &out->untraced_bytes);
    /* libchurn's own memory is not the program's: it leaves "outside the heap" */
    out->has_own = churn_frag_counter_at(f->own_counter, out->row, f->epochs, &out->own_bytes);
    if (out->has_own && out->has_rss && !out->rss_stale && !out->not_resident)
        out->outside_heap_bytes -= (int64_t)out->own_bytes;
}

int churn_frag_last_read(const churn_fragmentation *f, uint64_t exit_epoch, churn_frag_row *out)
{
    churn_frag_row last;
    if (!f->nrows || f->books == CHURN_BOOKS_NONE)
        return 0;
    churn_frag_row_at(f, f->nrows - 1, &last);
    if (last.has_books || last.epoch != exit_epoch)
        return 0;
    for (size_t i = f->nrows - 1; i-- > 0;) {
        churn_frag_row_at(f, i, out);
        if (out->has_books)
            return 1;
    }
    return 0;
}

int churn_frag_counter_at(int counter, const churn_epoch_row *row, const churn_epochs *t,
                      uint64_t *bytes)
{
    if (counter < 0 || !row || (size_t)counter >= row->n_counters)
        return 0;
    *bytes = churn_epochs_counters(t, row)[counter];
    return 1;
}

void churn_fragment_free(churn_fragmentation *f)
{
    free(f->snaps);
    free(f->sites);
    free(f->classes);
    free(f->before_sites);
    free(f->peak_sites);
    memset(f, 0, sizeof *f);
}
