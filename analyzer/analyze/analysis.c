#include "analyze/analysis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/crosscheck.h"
#include "base/util.h"

/* churn_regions' gone: bytes a call of `stack` had mapped are unmapped. */
static void unmapped(void *ctx, uint64_t stack, uint64_t bytes)
{
    churn_analysis *a = ctx;
    churn_growth_change(&a->mappings, churn_growth_site(&a->mappings, stack), a->map_epoch, 1,
                        0, bytes);
}

void churn_analysis_init(churn_analysis *a, const churn_trace_info *info, churn_window window,
                         uint64_t first_epoch, churn_warnings *warn, churn_symbolizer *sym)
{
    memset(a, 0, sizeof *a);
    a->info = info;
    a->window = window;
    a->stack_sample = 1;
    a->events = (info->flags & CHURN_FILE_EVENTS) != 0;
    a->warn = warn;
    a->warned_before = warn->count;
    a->uncounted_before = warn->suppressed;
    a->sym = sym;
    a->first_epoch = a->last_epoch = first_epoch;
    churn_growth_init(&a->growth, window.has_first ? window.first : first_epoch,
                      window.has_last ? window.last : UINT64_MAX);
    churn_growth_init(&a->mappings, a->growth.window_first, a->growth.window_last);
    a->regions.gone = unmapped;
    a->regions.ctx = a;
    /* Without a symbolizer (a tree's figures, nothing printed by callsite), callsites are
       not merged into functions, and no module's debug info is read. */
    if (sym) {
        churn_functions_attach(&a->functions, &a->growth, &a->stacks, sym);
        churn_functions_attach(&a->map_functions, &a->mappings, &a->stacks, sym);
    }
    a->types = churn_cxx_types_new(sym, &a->stacks);
    churn_peak_init(&a->peak, window.has_first, window.first, window.has_last, window.last);
}

void churn_analysis_fit(churn_analysis *a, uint64_t first, uint64_t last)
{
    a->has_fit = 1;
    a->steady.first = first;
    a->steady.last = last;
    /* samples past the window must stay out of the fits as they are taken */
    churn_growth *tables[] = {&a->growth, &a->functions.growth, &a->mappings,
                              &a->map_functions.growth};
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        tables[i]->window_first = first;
        tables[i]->window_last = last;
    }
    a->epochs.has_fit = 1;
    a->epochs.fit_first = first;
    a->epochs.fit_last = last;
}

void churn_analysis_free(churn_analysis *a)
{
    churn_stack_defs_free(&a->stacks);
    churn_module_map_free(&a->modules);
    churn_growth_free(&a->growth);
    churn_functions_free(&a->functions);
    churn_growth_free(&a->mappings);
    churn_functions_free(&a->map_functions);
    churn_cxx_types_free(a->types);
    churn_epochs_free(&a->epochs);
    churn_peak_free(&a->peak);
    free(a->allocator);
    for (size_t i = 0; i < a->n_counter_names; i++)
        free(a->counter_names[i]);
    free(a->counter_names);
    free(a->class_sizes);
    free(a->class_spans);
    churn_fragment_free(&a->frag);
    churn_regions_free(&a->regions);
}

void churn_analysis_segment(churn_analysis *a, const churn_segment_info *s)
{
    a->in_first_segment = a->segments_used == 0;
    if (a->in_first_segment)
        a->first_seq = s->seq;
    a->segments_used++;
    a->last_seq = a->segment_seq = s->seq;
    if (s->last_epoch > a->last_epoch)
        a->last_epoch = s->last_epoch;
}

static void note_epoch(churn_analysis *a, uint64_t epoch)
{
    if (epoch > a->last_epoch)
        a->last_epoch = epoch;
}

static void close_clock_epoch(churn_analysis *a)
{
    if (!churn_in_window(&a->window, a->clock))
        return;
    churn_epochs_set_live(&a->epochs, a->clock, a->live_count, a->live_bytes, a->live_usable);
}

/* The live value of an epoch is what the events say once a later epoch's first event
   appears; events tagged with an older epoch (drained late) count from the current one. */
static void advance_clock(churn_analysis *a, uint64_t epoch)
{
    note_epoch(a, epoch);
    if (a->clock_started && epoch <= a->clock)
        return;
    /* The epochs between the clock's and this one saw no event: their rows (a summary's)
       take the live value as it is now, before they may merge. */
    if (a->clock_started)
        close_clock_epoch(a);
    churn_epochs_fill_live(&a->epochs, !a->clock_started, a->clock, epoch, a->live_count,
                           a->live_bytes, a->live_usable);
    a->clock = epoch;
    a->clock_started = 1;
    churn_epochs_settle_to(&a->epochs, epoch);
}

/* Events after the window's end cannot change any figure; events before its start still
   build the live state the window starts from.  That the process went on past the window is
   kept: what is live at the window's end was not live at any exit (churn_analysis_ending). */
static int past_window(churn_analysis *a, uint64_t epoch)
{
    if (!a->window.has_last || epoch <= a->window.last)
        return 0;
    a->went_on = 1;
    return 1;
}

/* Events of one epoch and allocation info, counted by the decoder (records.h): the same
   sums as event by event, since nothing in between reads what they change.  In a sampled
   trace each object stands for its weight (churn_object_weight) everywhere, except in the
   counts of allocations, frees and bytes allocated, which EPOCH_END has exactly. */
static void on_counts(churn_analysis *a, const churn_record *r)
{
    uint64_t size = r->u.counts.size, usable = size + r->u.counts.slack;
    uint64_t allocs = r->u.counts.allocs, frees = r->u.counts.frees;
    int sampled = a->sample_bytes != 0;
    a->allocs_seen += allocs;
    if (past_window(a, r->epoch))
        return;
    advance_clock(a, r->epoch);
    double ow = churn_object_weight(a, size), sw = churn_site_weightf(a, r->u.counts.stack, size);
    uint64_t o_allocs = churn_scale(ow, allocs), o_frees = churn_scale(ow, frees);
    uint64_t o_alloc_bytes = churn_scale(ow, allocs * size), o_free_bytes = churn_scale(ow, frees * size);
    a->trace_live_count = churn_wrap_sub(churn_wrap_add(a->trace_live_count, allocs), frees);
    a->trace_live_bytes =
        churn_wrap_sub(churn_wrap_add(a->trace_live_bytes, allocs * size), frees * size);
    a->live_count = churn_wrap_sub(churn_wrap_add(a->live_count, o_allocs), o_frees);
    a->live_bytes = churn_wrap_sub(churn_wrap_add(a->live_bytes, o_alloc_bytes), o_free_bytes);
    a->live_usable = churn_wrap_sub(churn_wrap_add(a->live_usable, churn_scale(ow, allocs * usable)),
                                    churn_scale(ow, frees * usable));
    churn_callsite *site = sw != 0 ? churn_growth_site(&a->growth, r->u.counts.stack) : NULL;
    uint64_t s_allocs = churn_scale(sw, allocs), s_frees = churn_scale(sw, frees);
    uint64_t s_alloc_bytes = churn_scale(sw, allocs * size), s_free_bytes = churn_scale(sw, frees * size);
    if (site && allocs)
        churn_growth_change(&a->growth, site, a->clock, 0, s_allocs, s_alloc_bytes);
    if (site && frees)
        churn_growth_change(&a->growth, site, a->clock, 1, s_frees, s_free_bytes);
    if (site && sampled)
        churn_growth_samples(&a->growth, site, (int64_t)(allocs - frees), 0);
    if (site && frees && a->has_freed && churn_in_window(&a->freed, r->epoch))
        churn_growth_freed(&a->growth, site, r->epoch, 0, s_frees, s_free_bytes);
    /* the frees are of objects allocated in this very epoch: lifetime "same" */
    if (!churn_in_window(&a->window, r->epoch))
        return;
    a->lifetime[0] += o_frees;
    /* "freed before any other heap event" cannot be told from a sample of the events */
    uint64_t temporary = sampled ? 0 : r->u.counts.temporary;
    a->totals.temporary += temporary;
    if (site) {
        site->temporary += churn_scale(sw, temporary);
        site->lifetime[0] += s_frees;
        site->allocs += s_allocs;
        site->alloc_bytes += s_alloc_bytes;
        site->frees += s_frees;
        site->free_bytes += s_free_bytes;
        if (sampled)
            churn_growth_samples(&a->growth, site, 0, allocs);
    }
    a->totals.reallocs += churn_scale(ow, r->u.counts.reallocs);
    a->totals.free_bytes += o_free_bytes;
    churn_epoch_row *row = churn_epochs_row(&a->epochs, r->epoch);
    row->free_bytes += o_free_bytes;
    if (!sampled) {
        a->totals.allocs += allocs;
        a->totals.alloc_bytes += allocs * size;
        a->totals.frees += frees;
        row->allocs += allocs;
        row->alloc_bytes += allocs * size;
        row->frees += frees;
    }
    churn_class_stats *c = &a->classes[churn_size_class(size)];
    c->allocs += o_allocs;
    c->alloc_bytes += o_alloc_bytes;
    c->frees += o_frees;
    c->free_bytes += o_free_bytes;
}

static void on_free(churn_analysis *a, const churn_record *r)
{
    uint64_t size = r->u.free.size, stack = r->u.free.stack;
    uint64_t age = r->u.free.age;
    int sampled = a->sample_bytes != 0;
    if (past_window(a, r->epoch))
        return;
    advance_clock(a, r->epoch);
    if (r->u.free.addr == 0) {
        a->zero_address_events++;
        return;
    }
    if (age > r->epoch) {
        a->bad_ages++;
        age = r->epoch;
    }
    /* Which object this frees is the live pass's business (livepass.h). */
    uint64_t alloc_epoch = r->epoch - age;
    double ow = churn_object_weight(a, size), sw = churn_site_weightf(a, stack, size);
    uint64_t o_count = churn_scale(ow, 1), o_bytes = churn_scale(ow, size);
    uint64_t s_count = churn_scale(sw, 1), s_bytes = churn_scale(sw, size);
    a->trace_live_count = churn_wrap_sub(a->trace_live_count, 1);
    a->trace_live_bytes = churn_wrap_sub(a->trace_live_bytes, size);
    a->live_count = churn_wrap_sub(a->live_count, o_count);
    a->live_bytes = churn_wrap_sub(a->live_bytes, o_bytes);
    a->live_usable = churn_wrap_sub(a->live_usable, churn_scale(ow, size + r->u.free.slack));
    churn_callsite *site = sw != 0 ? churn_growth_site(&a->growth, stack) : NULL;
    if (site)
        churn_growth_change(&a->growth, site, a->clock, 1, s_count, s_bytes);
    if (site && sampled)
        churn_growth_samples(&a->growth, site, -1, 0);
    if (site && a->has_freed && churn_in_window(&a->freed, r->epoch))
        churn_growth_freed(&a->growth, site, alloc_epoch,
                           a->freed.has_first && alloc_epoch < a->freed.first, s_count, s_bytes);
    if (churn_in_window(&a->window, alloc_epoch)) {
        unsigned b = churn_lifetime_bucket(age);
        a->lifetime[b] += o_count;
        if (site)
            site->lifetime[b] += s_count;
    }
    if (!churn_in_window(&a->window, r->epoch))
        return;
    if (site) {
        site->frees += s_count;
        site->free_bytes += s_bytes;
        site->temporary += (uint64_t)(!sampled && r->u.free.temporary) * s_count;
    }
    a->totals.temporary += (uint64_t)(!sampled && r->u.free.temporary);
    a->totals.free_bytes += o_bytes;
    churn_epoch_row *row = churn_epochs_row(&a->epochs, r->epoch);
    row->free_bytes += o_bytes;
    if (!sampled) {
        a->totals.frees++;
        row->frees++;
    }
    churn_class_stats *c = &a->classes[churn_size_class(size)];
    c->frees += o_count;
    c->free_bytes += o_bytes;
}

/* Mappings are state, followed through every epoch: a window starts with what was mapped. */
static void track_map(churn_analysis *a, const churn_record *r)
{
    const uint64_t addr = r->u.map.addr, len = r->u.map.length, stack = r->u.map.stack;
    a->map_epoch = r->epoch;
    switch (r->kind) {
    case CHURN_MAP_MMAP:
        if (r->u.map.internal) { /* the allocator's own: its heap */
            churn_regions_unmap(&a->regions, addr, len);
        } else {
            churn_regions_map(&a->regions, addr, len, stack);
            churn_growth_change(&a->mappings, churn_growth_site(&a->mappings, stack), r->epoch,
                                0, 0, len);
        }
        break;
    case CHURN_MAP_MUNMAP:
        churn_regions_unmap(&a->regions, addr, len);
        break;
    case CHURN_MAP_MREMAP: /* a = new length, b = new address */
        if (churn_regions_unmap(&a->regions, addr, len)) {
            churn_regions_map(&a->regions, r->u.map.b, r->u.map.a, stack);
            churn_growth_change(&a->mappings, churn_growth_site(&a->mappings, stack), r->epoch,
                                0, 0, r->u.map.a);
        }
        break;
    }
}

static void on_other_event(churn_analysis *a, const churn_record *r)
{
    if (r->tag == CHURN_REC_MAP)
        track_map(a, r);
    if (past_window(a, r->epoch))
        return;
    advance_clock(a, r->epoch);
    if (!churn_in_window(&a->window, r->epoch))
        return;
    if (r->tag == CHURN_REC_FREE_UNKNOWN)
        a->totals.unknown_frees++;
    else
        a->totals.map_calls++;
}

/* The first used segment's carry is the state the trace starts from; later ones must agree
   with what the events built (else events were lost between segments). */
static void on_carry(churn_analysis *a, const churn_record *r)
{
    if (!a->in_first_segment) {
        if (!a->window.has_last && (a->trace_live_count != (int64_t)r->u.carry.live_count ||
                                    a->trace_live_bytes != (int64_t)r->u.carry.live_bytes)) {
            if (!a->carry_mismatches++) {
                a->carry_mismatch_seq = a->segment_seq;
                a->carry_expected_count = r->u.carry.live_count;
                a->carry_seen_count = (uint64_t)a->trace_live_count;
            }
        }
        return;
    }
    a->trace_live_count = (int64_t)r->u.carry.live_count;
    a->trace_live_bytes = (int64_t)r->u.carry.live_bytes;
    int64_t count = a->trace_live_count, bytes = a->trace_live_bytes;
    if (a->sample_bytes) { /* each carried sample as of its callsite's mean size */
        count = bytes = 0;
        for (size_t i = 0; i < r->u.carry.n; i++) {
            const churn_carry_entry *e = &r->u.carry.entries[i];
            double w = churn_sample_weight(a->sample_bytes,
                                           e->live_count ? e->live_bytes / e->live_count : 0);
            count = churn_wrap_add(count, churn_scale(w, e->live_count));
            bytes = churn_wrap_add(bytes, churn_scale(w, e->live_bytes));
        }
    }
    a->live_count = a->carried_count = a->start_live_count = count;
    a->live_bytes = a->carried_bytes = a->start_live_bytes = bytes;
    a->growth.carried_inherited = a->first_seq == 0 && !a->window.has_first && count > 0;
    /* the peak tracker starts from the same state, which comes before any event */
    a->peak.bytes = a->live_bytes;
    a->peak.count = a->live_count;
    for (size_t i = 0; i < r->u.carry.n; i++) {
        uint32_t at = churn_peak_site_of(&a->peak, r->u.carry.entries[i].stack);
        churn_peak_site *s = &a->peak.sites[at];
        s->bytes = (int64_t)r->u.carry.entries[i].live_bytes;
        s->count = (int64_t)r->u.carry.entries[i].live_count;
    }
    for (size_t i = 0; i < r->u.carry.n; i++) {
        const churn_carry_entry *e = &r->u.carry.entries[i];
        /* a sampled callsite's objects carried in are weighted as of their mean size */
        double w = churn_site_weightf(a, e->stack,
                                      e->live_count ? e->live_bytes / e->live_count : 0);
        if (w == 0)
            continue;
        churn_callsite *site = churn_growth_site(&a->growth, e->stack);
        churn_growth_change(&a->growth, site, a->first_epoch, 0, churn_scale(w, e->live_count),
                            churn_scale(w, e->live_bytes));
        if (a->sample_bytes)
            churn_growth_samples(&a->growth, site, (int64_t)e->live_count, 0);
    }
}

static void on_epoch_end(churn_analysis *a, const churn_epoch_summary *s)
{
    note_epoch(a, s->epoch);
    if (!a->events)
        a->allocs_seen += s->allocs;
    if (!churn_in_window(&a->window, s->epoch))
        return;
    churn_epoch_row *row = churn_epochs_summary(&a->epochs, s);
    if (!row) {
        a->duplicate_summaries++;
        return;
    }
    if (a->events) {
        if (row->summary_epoch == s->epoch) {
            row->mapped_bytes = a->regions.bytes;
            row->at_summary_count = a->live_count;
            row->at_summary_bytes = a->live_bytes;
        }
        if (a->sample_bytes) {
            /* the counts of every allocation and free, the events being a sample */
            row->allocs += s->allocs;
            row->frees += s->frees;
            row->alloc_bytes += s->alloc_bytes;
            a->totals.allocs += s->allocs;
            a->totals.frees += s->frees;
            a->totals.alloc_bytes += s->alloc_bytes;
        }
        return;
    }
    /* Without events the summaries are the only source of every figure. */
    row->allocs += s->allocs;
    row->frees += s->frees;
    row->alloc_bytes += s->alloc_bytes;
    row->free_bytes += s->free_bytes;
    churn_epochs_set_live(&a->epochs, s->epoch, (int64_t)s->live_count, (int64_t)s->live_bytes,
                          0);
    churn_epochs_settle_to(&a->epochs, s->epoch);
    a->totals.allocs += s->allocs;
    a->totals.frees += s->frees;
    a->totals.alloc_bytes += s->alloc_bytes;
    a->totals.free_bytes += s->free_bytes;
    for (size_t i = 0; i < s->n_classes; i++) {
        const churn_class_entry *e = &s->classes[i];
        if (e->cls >= CHURN_SIZE_CLASSES)
            continue;
        churn_class_stats *c = &a->classes[e->cls];
        c->allocs += e->allocs;
        c->frees += e->frees;
        c->alloc_bytes += e->alloc_bytes;
        c->free_bytes += e->free_bytes;
    }
    for (size_t i = 0; i < s->n_callsites; i++) {
        const churn_callsite_entry *e = &s->callsites[i];
        uint64_t w = churn_site_weight(a, e->stack);
        if (!w)
            continue;
        churn_callsite *site = churn_growth_site(&a->growth, e->stack);
        churn_growth_set(&a->growth, site, s->epoch, (int64_t)(e->live_count * w),
                         (int64_t)(e->live_bytes * w));
        site->allocs += e->allocs * w;
        site->frees += e->frees * w;
        site->alloc_bytes += e->alloc_bytes * w;
        site->free_bytes += e->free_bytes * w;
    }
}

static void on_allocator(churn_analysis *a, const churn_record *r)
{
    if (!a->allocator) {
        a->allocator = churn_xstrdup(r->u.allocator.name);
        a->allocator_page = r->u.allocator.page_size;
        a->n_counter_names = r->u.allocator.n_counters;
        a->counter_names = churn_xcalloc(a->n_counter_names, sizeof *a->counter_names);
        for (size_t i = 0; i < a->n_counter_names; i++)
            a->counter_names[i] = churn_xstrdup(r->u.allocator.counters[i]);
        return;
    }
    int same = strcmp(a->allocator, r->u.allocator.name) == 0 &&
               a->n_counter_names == r->u.allocator.n_counters;
    for (size_t i = 0; same && i < a->n_counter_names; i++)
        same = strcmp(a->counter_names[i], r->u.allocator.counters[i]) == 0;
    a->allocator_changed |= !same;
}

/* The newest table wins: the allocator states the same one in every segment. */
static void on_size_classes(churn_analysis *a, const churn_record *r)
{
    size_t n = r->u.size_classes.n;
    free(a->class_sizes);
    free(a->class_spans);
    a->class_sizes = churn_xcalloc(n ? n : 1, sizeof *a->class_sizes);
    a->class_spans = churn_xcalloc(n ? n : 1, sizeof *a->class_spans);
    if (n) {
        memcpy(a->class_sizes, r->u.size_classes.sizes, n * sizeof *a->class_sizes);
        memcpy(a->class_spans, r->u.size_classes.span_bytes, n * sizeof *a->class_spans);
    }
    a->n_classes = n;
}

static void on_module(churn_analysis *a, const churn_record *r)
{
    churn_module_map_add(&a->modules, r->u.module.id, r->u.module.bias, r->u.module.start,
                         r->u.module.end, r->u.module.path);
    /* every time: a module's record comes again when it is unloaded */
    if (a->sym)
            churn_symbolizer_add_module(a->sym, r->u.module.id, r->u.module.path,
                                    r->u.module.bias, r->u.module.start, r->u.module.end,
                                    r->u.module.unloaded, r->u.module.build_id,
                                    r->u.module.build_id_len);
}

/* The modules a new stack runs through are read ahead (symbolize.h): reports resolve some
   of its frames, and reading debug info takes long. */
static void on_stack(churn_analysis *a, const churn_record *r)
{
    int defined =
        churn_stack_defs_define(&a->stacks, r->u.stack.id, r->u.stack.ips, r->u.stack.depth,
                                r->u.stack.generation, r->u.stack.ref, r->u.stack.shared);
    a->stack_conflicts += defined < 0;
    if (defined <= 0)
        return;
    const churn_module_range *last = NULL;
    for (size_t i = 0; i < r->u.stack.depth; i++) {
        uint64_t ip = r->u.stack.ips[i];
        if (last && ip >= last->start && ip < last->end)
            continue;
        const churn_module_range *m = churn_module_map_find(&a->modules, ip);
        if (m && m != last && a->sym)
            churn_symbolizer_prefetch(a->sym, m->id);
        last = m;
    }
}

void churn_analysis_record(void *ctx, const churn_record *r)
{
    churn_analysis *a = ctx;
    switch (r->tag) {
    case CHURN_REC_SEGMENT_START:
        if (r->u.segment_start.seq != a->segment_seq)
            churn_warn(a->warn, "segment %llu starts with the sequence number %llu",
                       (unsigned long long)a->segment_seq,
                       (unsigned long long)r->u.segment_start.seq);
        if (!a->trace_start_ns)
            a->trace_start_ns = r->u.segment_start.ns;
        break;
    case CHURN_REC_MODULE:
        on_module(a, r);
        break;
    case CHURN_REC_STACK:
        on_stack(a, r);
        break;
    case CHURN_REC_CODE:
        if (a->sym && r->kind == CHURN_CODE_PY)
            churn_symbolizer_add_py_code(a->sym, r->u.py_code.id, r->u.py_code.name);
        else if (a->sym)
            churn_symbolizer_add_code(a->sym, r->u.code.start, r->u.code.size, r->u.code.name);
        break;
    case CHURN_REC_ALLOCATOR:
        on_allocator(a, r);
        break;
    case CHURN_REC_SIZE_CLASSES:
        on_size_classes(a, r);
        break;
    case CHURN_REC_CARRY:
        on_carry(a, r);
        break;
    case CHURN_REC_STACK_SAMPLE:
        /* the same in every segment: a change means segments of different runs */
        a->stack_sample_changed |= a->stack_sample > 1 && a->stack_sample != r->u.stack_sample.n;
        if (a->stack_sample == 1)
            a->stack_sample = r->u.stack_sample.n;
        break;
    case CHURN_REC_SAMPLE_BYTES:
        a->sample_bytes_changed |= a->sample_bytes && a->sample_bytes != r->u.sample_bytes.n;
        if (!a->sample_bytes)
            a->sample_bytes = r->u.sample_bytes.n;
        break;
    case CHURN_REC_SHORT_STACKS:
        if (r->u.short_stacks.n > a->totals.short_stacks)
            a->totals.short_stacks = r->u.short_stacks.n;
        break;
    case CHURN_REC_COUNTERS_STALE:
        if (churn_in_window(&a->window, r->u.counters_stale.epoch)) {
            churn_epoch_row *row = churn_epochs_row(&a->epochs, r->u.counters_stale.epoch);
            /* a merged row keeps one epoch's counters: this one's only if they are its */
            if (!row->shift || row->summary_epoch == r->u.counters_stale.epoch) {
                row->counters_stale = 1;
                row->counters_age_ns = r->u.counters_stale.age_ns;
            }
        }
        break;
    case CHURN_REC_DROPPED:
        a->totals.dropped_events += r->u.dropped.count;
        *(r->u.dropped.reason == CHURN_DROP_RING_FULL       ? &a->totals.dropped_ring
          : r->u.dropped.reason == CHURN_DROP_WRITE_ERROR   ? &a->totals.dropped_write
          : r->u.dropped.reason == CHURN_DROP_SEGMENT_TOO_BIG ? &a->totals.dropped_too_big
                                                           : &a->totals.dropped_other) +=
            r->u.dropped.count;
        if (churn_in_window(&a->window, a->clock))
            churn_epochs_row(&a->epochs, a->clock)->dropped += r->u.dropped.count;
        break;
    case CHURN_REC_UNORDERED:
        a->unordered_events += r->u.unordered.count;
        break;
    case CHURN_REC_EXIT:
        /* After a detach the objects still live were not kept until any exit. */
        a->detached = r->u.exit.how == CHURN_EXIT_DETACH;
        a->has_exit = !a->detached;
        a->exit_how = r->u.exit.how;
        a->exit_detail = r->u.exit.detail;
        break;
    case CHURN_REC_COUNTS:
        on_counts(a, r);
        break;
    case CHURN_REC_FREE:
        on_free(a, r);
        break;
    case CHURN_REC_FREE_UNKNOWN:
    case CHURN_REC_MAP:
        on_other_event(a, r);
        break;
    case CHURN_REC_EPOCH_END:
        on_epoch_end(a, &r->u.epoch_end);
        break;
    }
}

static void count_leak(void *ctx, const churn_object *o)
{
    churn_analysis *a = ctx;
    if (!churn_in_window(&a->window, o->epoch))
        return;
    double ow = churn_object_weight(a, o->size), sw = churn_site_weightf(a, o->stack, o->size);
    a->leaked_count += churn_scale(ow, 1);
    a->leaked_bytes += churn_scale(ow, o->size);
    a->lifetime[CHURN_LIFETIME_NEVER] += churn_scale(ow, 1);
    if (sw != 0)
        churn_growth_site(&a->growth, o->stack)->lifetime[CHURN_LIFETIME_NEVER] +=
            churn_scale(sw, 1);
}

/* Epochs that no event closed (no events at all, or only a summary) take the live value
   of the epoch before them. */
static void fill_live_gaps(churn_analysis *a)
{
    int64_t count = a->start_live_count, bytes = a->start_live_bytes, usable = 0;
    for (size_t i = 0; i < a->epochs.count; i++) {
        const churn_epoch_row *row = &a->epochs.rows[i];
        if (row->has_live) {
            count = row->live_count;
            bytes = row->live_bytes;
            usable = row->live_usable_bytes;
        } else {
            churn_epochs_set_live(&a->epochs, row->epoch, count, bytes, usable);
        }
    }
}

static void finish_summaries_only(churn_analysis *a)
{
    for (size_t i = a->epochs.count; i-- > 0;) {
        const churn_epoch_row *row = &a->epochs.rows[i];
        if (row->has_summary) {
            a->leaked_count = row->s_live_count;
            a->leaked_bytes = row->s_live_bytes;
            break;
        }
    }
}

/* A free that matched no live object must have freed one carried in from before the
   trace's first segment. */
static void take_live_pass(churn_analysis *a, const churn_live_pass *p)
{
    a->unmatched_frees = p->unmatched_frees;
    a->mismatched_frees = p->mismatched_frees;
    a->displaced_unfreed = p->live.displaced_count;
    a->displaced_evicted = p->live.displaced_evicted;
    a->carried_count = churn_wrap_sub(a->carried_count, p->unmatched_frees);
    a->carried_bytes = churn_wrap_sub(a->carried_bytes, p->unmatched_bytes);
}

/* The signal that asked the program to stop, caught before it exited: the shim's counter
   libchurn.stop_signal at the newest summary (the exit's, which reads it last). */
static uint64_t stop_signal(const churn_analysis *a)
{
    size_t k = 0;
    while (k < a->n_counter_names && strcmp(a->counter_names[k], "libchurn.stop_signal"))
        k++;
    for (size_t i = a->epochs.count; k < a->n_counter_names && i-- > 0;) {
        const churn_epoch_row *r = &a->epochs.rows[i]; /* sorted: the newest last */
        if (r->has_summary && k < r->n_counters)
            return churn_epochs_counters(&a->epochs, r)[k];
    }
    return 0;
}

void churn_analysis_finish(churn_analysis *a, const churn_live_pass *p)
{
    uint64_t last = a->last_epoch;
    if (a->window.has_last && a->window.last < last)
        last = a->window.last;
    /* The epoch that the process's exit (or the detach) ended is the tail after the last
       unit of work, not one more unit: growth per epoch is fitted without it unless the
       window names it. */
    int tail = (a->has_exit || a->detached) && !a->window.has_last && last == a->last_epoch &&
               last > a->first_epoch + 1;
    if (tail)
        last--;
    a->steady.has_exit_epoch = tail;
    a->steady.exit_epoch = last + 1;
    if (a->has_fit && a->steady.last < last)
        last = a->steady.last;
    a->growth.window_last = last;
    if (!a->has_fit) {
        a->steady.first = a->growth.window_first;
        a->steady.last = last;
    }
    if (a->events && a->clock_started)
        close_clock_epoch(a);
    churn_epochs_sort(&a->epochs); /* no row is added from here on */
    if (a->events) {
        fill_live_gaps(a);
        take_live_pass(a, p);
        churn_liveset_foreach(&p->live, count_leak, a);
        if (!a->window.has_first && a->carried_count > 0) {
            a->leaked_count += (uint64_t)a->carried_count;
            a->leaked_bytes += a->carried_bytes > 0 ? (uint64_t)a->carried_bytes : 0;
        }
    } else {
        finish_summaries_only(a);
    }
    churn_epochs_finish(&a->epochs, last); /* no row changes from here on */
    a->stop_signal = stop_signal(a);
    churn_growth_finish(&a->growth);
    churn_functions_finish(&a->functions, &a->growth, churn_analysis_ending(a));
    a->mappings.window_last = last;
    churn_growth_finish(&a->mappings);
    churn_functions_finish(&a->map_functions, &a->mappings, churn_analysis_ending(a));
    churn_crosscheck(a);
}

static int by_peak_bytes(const void *x, const void *y)
{
    const churn_peak_row *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

churn_peak_row *churn_peak_rows(const churn_analysis *a, size_t top, size_t *n)
{
    const churn_peak *p = &a->peak;
    churn_peak_row *rows = churn_xcalloc(p->nsites ? p->nsites : 1, sizeof *rows);
    size_t k = 0;
    for (size_t i = 1; i < p->nsites; i++) {
        uint64_t w = churn_site_weight(a, p->sites[i].stack);
        int64_t bytes, count;
        churn_peak_site_at(p, &p->sites[i], &bytes, &count);
        if (!w || bytes <= 0)
            continue;
        /* a damaged trace's figures wrap, as everywhere (util.h) */
        rows[k++] = (churn_peak_row){p->sites[i].stack, (int64_t)((uint64_t)count * w),
                                     (int64_t)((uint64_t)bytes * w)};
    }
    qsort(rows, k, sizeof *rows, by_peak_bytes);
    *n = top && top < k ? top : k;
    return rows;
}

double churn_analysis_checkpoint_s(const churn_analysis *a)
{
    uint64_t at = a->info->checkpoint_ns, start = a->trace_start_ns;
    return at > start ? (double)(at - start) / 1e9 : 0;
}

int churn_analysis_estimate_note(const churn_analysis *a, char *buf, size_t len)
{
    if (!a->sample_bytes)
        return 0;
    snprintf(buf, len, "estimates from a sample of the allocations, one per %llu bytes "
                       "allocated (CHURN_SAMPLE_BYTES): a figure of B bytes from k samples is "
                       "within about B/sqrt(k) (one standard error); the counts of allocations "
                       "and frees and the bytes allocated are exact",
             (unsigned long long)a->sample_bytes);
    return 1;
}
