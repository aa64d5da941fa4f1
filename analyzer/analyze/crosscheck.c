#include "analyze/crosscheck.h"

#include <stdio.h>

#include "analyze/analysis.h"
#include "base/util.h"

/* An epoch is comparable when all of its events can be in the trace: it has a summary,
   nothing was dropped in it, and it did not begin in a segment the ring overwrote.  A merged
   row (epochs.h) compares its sums when every epoch in it with a live value has a summary. */
static int comparable(const churn_analysis *a, const churn_epoch_row *row)
{
    if (!row->has_summary || row->dropped || (row->shift && row->n_summary != row->n_live))
        return 0;
    return a->first_seq == 0 || row->epoch > a->first_epoch;
}

/* An event drained after its epoch closed is in that epoch by the events and in a later
   epoch's summary, which counts it as late: the two disagree by the same amount in opposite
   directions.  So events and summaries are compared over runs of consecutive comparable
   epochs that end where the running differences are back at zero; a run disagrees when it
   never gets back, or gets back without a late event to explain it. */
typedef struct run_diff {
    int64_t allocs, frees, alloc_bytes, free_bytes;
    int moved, late;
    const churn_epoch_row *first;
} run_diff;

static int run_settled(const run_diff *d)
{
    return !d->allocs && !d->frees && !d->alloc_bytes && !d->free_bytes;
}

static void check_summaries(churn_analysis *a)
{
    size_t bad = 0, bad_live = 0;
    const churn_epoch_row *first = NULL, *first_live = NULL;
    run_diff d = {0};
    for (size_t i = 0; i <= a->epochs.count; i++) {
        const churn_epoch_row *row = i < a->epochs.count ? &a->epochs.rows[i] : NULL;
        if (!row || !comparable(a, row) ||
            (d.first && row->epoch != a->epochs.rows[i - 1].last + 1)) {
            if (!run_settled(&d) && !bad++)
                first = d.first;
            d = (run_diff){0};
            if (!row || !comparable(a, row))
                continue;
        }
        if (!d.first)
            d.first = row;
        int64_t da = (int64_t)(row->allocs - row->s_allocs),
                df = (int64_t)(row->frees - row->s_frees),
                dab = (int64_t)(row->alloc_bytes - row->s_alloc_bytes),
                dfb = (int64_t)(row->free_bytes - row->s_free_bytes);
        /* a damaged trace's figures can be anything: sums wrap, never overflow */
        d.allocs = churn_wrap_add(d.allocs, (uint64_t)da);
        d.frees = churn_wrap_add(d.frees, (uint64_t)df);
        d.alloc_bytes = churn_wrap_add(d.alloc_bytes, (uint64_t)dab);
        d.free_bytes = churn_wrap_add(d.free_bytes, (uint64_t)dfb);
        d.moved |= da || df || dab || dfb;
        d.late |= row->late_events != 0;
        if (run_settled(&d)) {
            if (d.moved && !d.late && !bad++)
                first = d.first;
            d = (run_diff){0};
        }
        /* The summary's live figures are the writer's when it closed the epoch, which is
           where it wrote the EPOCH_END: the events before that record are the ones it had
           counted.  The epoch's live value (epochs.h) is taken later, at the first event of
           a later epoch, and also holds the late events drained in between. */
        if (row->at_summary_count != (int64_t)row->s_live_count ||
            row->at_summary_bytes != (int64_t)row->s_live_bytes) {
            if (!bad_live++)
                first_live = row;
        }
    }
    if (bad)
        churn_warn(a->warn,
                   "%zu epoch(s) whose events disagree with the shim's epoch summary "
                   "(first: epoch %llu: events %llu allocs/%llu frees/%llu B/%llu B, "
                   "summary %llu/%llu/%llu B/%llu B)",
                   bad, (unsigned long long)first->epoch, (unsigned long long)first->allocs,
                   (unsigned long long)first->frees, (unsigned long long)first->alloc_bytes,
                   (unsigned long long)first->free_bytes, (unsigned long long)first->s_allocs,
                   (unsigned long long)first->s_frees,
                   (unsigned long long)first->s_alloc_bytes,
                   (unsigned long long)first->s_free_bytes);
    if (bad_live)
        churn_warn(
            a->warn,
            "%zu epoch summar(ies) whose live objects differ from the events written "
            "before them (first: epoch %llu: summary %llu objects/%llu B, events "
            "%lld objects/%lld B, %+lld objects/%+lld B)",
            bad_live, (unsigned long long)first_live->summary_epoch,
            (unsigned long long)first_live->s_live_count,
            (unsigned long long)first_live->s_live_bytes,
            (long long)first_live->at_summary_count, (long long)first_live->at_summary_bytes,
            (long long)churn_wrap_sub(first_live->at_summary_count, first_live->s_live_count),
            (long long)churn_wrap_sub(first_live->at_summary_bytes, first_live->s_live_bytes));
}

static void undefined_stacks(churn_analysis *a)
{
    size_t missing = 0;
    uint64_t example = 0;
    for (size_t i = 0; i < a->growth.count; i++) {
        size_t depth;
        uint64_t id = a->growth.sites[i].stack;
        if (id && !churn_stack_defs_get(&a->stacks, id, &depth)) {
            if (!missing++)
                example = id;
        }
    }
    if (missing)
        churn_warn(a->warn, "%zu stack id(s) used but never defined (first: %llu)", missing,
                   (unsigned long long)example);
}

static void event_oddities(churn_analysis *a)
{
    churn_warnings *w = a->warn;
    /* A forked child's trace starts with copies of its parent's objects (its first segment's
       carry): freeing them is what the child is expected to do. */
    uint64_t inherited = a->start_live_count > 0 ? (uint64_t)a->start_live_count : 0;
    if (a->unmatched_frees > inherited && a->first_seq == 0 && !a->totals.dropped_events)
        churn_warn(w, "%llu free(s) of objects the trace never allocated%s",
                   (unsigned long long)(a->unmatched_frees - inherited),
                   inherited ? " beyond the objects it started with" : "");
    if (a->mismatched_frees)
        churn_warn(w, "%llu free(s) whose size, stack or age differ from the live object "
                      "at that address",
                   (unsigned long long)a->mismatched_frees);
    if (a->displaced_unfreed)
        churn_warn(w, "%llu object(s) displaced by a reuse of their address were never freed",
                   (unsigned long long)a->displaced_unfreed);
    if (a->displaced_evicted)
        churn_warn(w, "%llu displaced object(s) evicted from the side table before their free",
                   (unsigned long long)a->displaced_evicted);
    if (a->unordered_events)
        churn_warn(w, "%llu event(s) written out of their address's order (the shim stopped "
                      "waiting for them): frees near them may pair with the wrong object",
                   (unsigned long long)a->unordered_events);
    if (a->zero_address_events)
        churn_warn(w, "%llu allocation event(s) at address 0 ignored",
                   (unsigned long long)a->zero_address_events);
    if (a->bad_ages)
        churn_warn(w, "%llu free(s) older than their own epoch; counted as allocated in epoch 0",
                   (unsigned long long)a->bad_ages);
    if (a->carry_mismatches)
        churn_warn(w, "%llu segment(s) carry a live state that differs from the events "
                      "(first: segment %llu: %llu objects carried, %llu per events)",
                   (unsigned long long)a->carry_mismatches,
                   (unsigned long long)a->carry_mismatch_seq,
                   (unsigned long long)a->carry_expected_count,
                   (unsigned long long)a->carry_seen_count);
    if (a->first_seq > 0)
        churn_warn(w,
                   "the trace starts at segment %llu: older segments are gone (overwritten "
                   "by the ring, unusable, or delta segments before a key segment); the "
                   "live state before it comes from its carry",
                   (unsigned long long)a->first_seq);
}

void churn_crosscheck(churn_analysis *a)
{
    churn_warnings *w = a->warn;
    if (a->events) {
        /* A sampled trace's summaries count every allocation, its events a sample of them
           (weighted into the rows): the carries check its events instead. */
        if (!a->sample_bytes)
            check_summaries(a);
        event_oddities(a);
    } else if (a->first_seq > 0) {
        churn_warn(w,
                   "the trace starts at segment %llu: older segments are gone (overwritten "
                   "by the ring, unusable, or delta segments before a key segment)",
                   (unsigned long long)a->first_seq);
    }
    undefined_stacks(a);
    if (a->stack_conflicts)
        churn_warn(w, "%llu stack id(s) redefined with different frames; the first kept",
                   (unsigned long long)a->stack_conflicts);
    if (a->duplicate_summaries)
        churn_warn(w, "%llu epoch summar(ies) repeated; the first kept",
                   (unsigned long long)a->duplicate_summaries);
    if (a->allocator_changed)
        churn_warn(w, "the allocator description changes between segments; the first kept");
    if (a->sample_bytes_changed)
        churn_warn(w, "the byte sampling rate (CHURN_SAMPLE_BYTES) changes between segments; "
                      "the first kept");
    if (a->stack_sample_changed)
        churn_warn(w, "the stack sampling rate changes between segments; the first kept");
    const churn_totals *t = &a->totals;
    /* Each reason names the buffer that was full and what changes it. */
    if (t->dropped_events)
        churn_warn(w, "the shim dropped %llu event(s): figures are incomplete",
                   (unsigned long long)t->dropped_events);
    if (t->dropped_ring)
        churn_warn(w, "%llu dropped with a thread's in-memory event buffer full (16384 "
                      "slots, no option sizes it) where the thread could not wait for the "
                      "writer (inside the allocator, or the writer stuck for 2 s), or with "
                      "libchurn's own memory exhausted; CHURN_EVENTS=0 records no events",
                   (unsigned long long)t->dropped_ring);
    if (t->dropped_write)
        churn_warn(w, "%llu unwritten: disk full or write error on the trace file (CHURN_OUT on "
                      "a disk with room, or a CHURN_RING_MB that fits it)",
                   (unsigned long long)t->dropped_write);
    if (t->dropped_too_big)
        churn_warn(w, "%llu in a segment larger than the ring file (a larger CHURN_RING_MB or a "
                      "smaller CHURN_SEGMENT_KB)",
                   (unsigned long long)t->dropped_too_big);
    if (t->dropped_other)
        churn_warn(w, "%llu dropped for a reason this analyzer does not know",
                   (unsigned long long)t->dropped_other);
    if (t->short_stacks)
        churn_warn(w, "%llu allocation stack(s) cut short to the allocating function's caller: "
                      "too little stack left to walk on (a signal handler on a small "
                      "sigaltstack); their callsites have that one frame",
                   (unsigned long long)t->short_stacks);
    if (a->allocator && !a->allocs_seen && !t->dropped_events)
        churn_warn(w, "no allocation was traced: the program's allocator may be linked into it "
                      "(see docs/design.md, ways in)");
    char held[96];
    if (a->info->ends_open)
        snprintf(held, sizeof held, "its last checkpoint, %.3f s into the trace",
                 churn_analysis_checkpoint_s(a));
    else
        snprintf(held, sizeof held, "the close of its last segment");
    if (!a->has_exit && !a->detached && a->info->version >= 5)
        churn_warn(w, "no exit record: the process ended without an exit libchurn saw (killed "
                      "by SIGKILL or the OOM killer, or an exit_group system call made inline, "
                      "past every function libchurn interposes) or was still running; the "
                      "trace holds everything up to %s, and lacks what came after it: with the "
                      "writer keeping up, at most the last 60 ms (a checkpoint at every pass "
                      "10 ms after the last, a pass at least every 50 ms), and the last epoch's "
                      "close", held);
    else if (!a->has_exit && !a->detached)
        churn_warn(w, "no exit record: the process was killed (SIGKILL), ended by an "
                      "exit_group system call made inline (past every function libchurn "
                      "interposes), or was still running; its events of the last CHURN_FLUSH_MS "
                      "(1 s by default) + 50 ms before the end, and the last epoch's close, are "
                      "not in the trace (trace format %u has no checkpoints)",
                   a->info->version);
}
