/*
 * The analysis proper: records in sequence order go in (analysis_record is a records.h
 * visitor), and out come totals, the per-epoch table, per-callsite growth and lifetimes, and
 * what was left live at the end, all restricted to an epoch window.
 *
 * Counting follows the events' own fields: a free names its allocation's size, stack and age,
 * so frees of objects allocated in a segment that the ring overwrote are still counted, and
 * they reduce the live state carried in (CHURN_REC_CARRY) instead.
 */
#ifndef CHURN_ANALYSIS_H
#define CHURN_ANALYSIS_H

#include <math.h>
#include <stdint.h>

#include "churn/format.h"
#include "analyze/epochs.h"
#include "analyze/fragment.h"
#include "analyze/functions.h"
#include "analyze/growth.h"
#include "analyze/lifetime.h"
#include "heap/livepass.h"
#include "read/modules.h"
#include "heap/peak.h"
#include "analyze/regions.h"
#include "read/reader.h"
#include "read/records.h"
#include "read/stacks.h"
#include "symbols/symbolize.h"
#include "base/warnings.h"
#include "analyze/window.h"

typedef struct churn_window {
    int has_first, has_last;
    uint64_t first, last; /* inclusive */
    int named;            /* an option names it (--epochs :, every epoch, too) */
} churn_window;

typedef struct churn_totals {
    uint64_t allocs, frees, alloc_bytes, free_bytes;
    uint64_t temporary; /* allocations whose free was the next heap event, in the trace's order */
    uint64_t unknown_frees, reallocs, map_calls, dropped_events;
    /* by reason: ring full, write error, segment too big, any other */
    uint64_t dropped_ring, dropped_write, dropped_too_big, dropped_other;
    uint64_t short_stacks; /* the largest running total of SHORT_STACKS records */
} churn_totals;

typedef struct churn_class_stats {
    uint64_t allocs, frees, alloc_bytes, free_bytes;
} churn_class_stats;

typedef struct churn_analysis {
    const churn_trace_info *info;
    churn_window window;
    /* The epochs slopes and rankings are fitted over (window.h): the steady window, or the
       one the options name; steady.first/last hold it once the analysis is finished. */
    churn_steady steady;
    int has_fit;        /* fit over steady.first..steady.last, set before the pass */
    churn_window freed; /* --freed: frees inside it are ranked by callsite and function */
    int has_freed;
    int events; /* the trace has allocation events, not only epoch summaries */
    churn_warnings *warn;
    size_t warned_before, uncounted_before; /* warn's lines and counted past its cap at init:
                                               a pass made again drops its own */
    churn_symbolizer *sym;

    churn_stack_defs stacks;
    churn_module_map modules;
    churn_growth growth;
    churn_functions functions; /* the callsites merged by allocating function */
    churn_cxx_types *types;    /* C++ types of the callsites, read on demand by reports */
    int types_done;            /* functions' types filled (churn_report_types) */
    churn_epochs epochs;

    churn_totals totals;
    churn_peak peak;       /* the high-water mark, fed by the decoder (traces with events) */
    uint64_t lifetime[CHURN_LIFETIME_BUCKETS];
    churn_class_stats classes[CHURN_SIZE_CLASSES];
    uint64_t leaked_count, leaked_bytes;

    /* live state of the process as the events tell it: carried in + allocated - freed */
    int64_t live_count, live_bytes;
    int64_t live_usable; /* usable bytes of the live objects allocated inside the trace */
    int64_t start_live_count, start_live_bytes; /* carried in by the first segment */
    /* the same as the trace's objects count, unweighted: what CARRY records must agree with */
    int64_t trace_live_count, trace_live_bytes;
    int64_t carried_count, carried_bytes; /* what is left of the carried-in state */
    uint64_t clock;        /* newest epoch among the events applied so far */
    int clock_started;
    uint64_t first_epoch, last_epoch; /* of the trace */

    size_t segments_used;
    uint64_t trace_start_ns; /* CLOCK_MONOTONIC when the first segment used was opened */
    uint64_t first_seq, last_seq, segment_seq;
    int in_first_segment;

    char *allocator;
    uint64_t allocator_page;             /* the page size its ALLOCATOR record states */
    char **counter_names;
    size_t n_counter_names;
    uint64_t *class_sizes, *class_spans; /* the allocator's own, when recorded */
    size_t n_classes;
    churn_fragmentation frag;            /* filled by churn_fragment_build after finish */
    churn_regions regions;               /* the program's own mappings, from MAP events */
    /* The same by the stack of the call that mapped them, as callsites whose live bytes are
       mapped bytes (their fits: the mappings' growth per epoch), and merged by function as
       allocations are (NULL symbolizer: not merged).  map_epoch: the MAP event's. */
    churn_growth mappings;
    churn_functions map_functions;
    uint64_t map_epoch;
    int has_exit;
    int detached;            /* the trace ends at a churn detach: the process went on */
    int went_on;             /* events past the window's end: the process went on after it */
    uint64_t stop_signal;    /* a signal that asks to stop (TERM, INT, QUIT) the program caught
                                before it exited (counter libchurn.stop_signal), or 0 */
    uint64_t exit_how, exit_detail;

    /* oddities, reported as warnings at the end */
    uint64_t unmatched_frees, mismatched_frees, zero_address_events; /* from the live pass */
    uint64_t displaced_unfreed, displaced_evicted;
    uint64_t unordered_events; /* CHURN_REC_UNORDERED: written out of their address's order */
    uint64_t allocs_seen; /* allocations in the trace, in any epoch */
    uint64_t bad_ages, stack_conflicts, carry_mismatches, duplicate_summaries;
    uint64_t carry_expected_count, carry_seen_count, carry_mismatch_seq;
    int allocator_changed, stack_sample_changed;
    /* CHURN_STACK_SAMPLE of the trace (1: every allocation has its stack) */
    uint64_t stack_sample;
    /* CHURN_SAMPLE_BYTES of the trace (0: every allocation is in it), and a change of it
       between segments */
    uint64_t sample_bytes;
    int sample_bytes_changed;
} churn_analysis;

/* first_epoch is the epoch current when the trace's first used segment was opened.  sym
   NULL: the figures only, for reports that print no frame (callsites are not merged into
   functions). */
void churn_analysis_init(churn_analysis *a, const churn_trace_info *info, churn_window window,
                         uint64_t first_epoch, churn_warnings *warn, churn_symbolizer *sym);
void churn_analysis_free(churn_analysis *a);

/* Seconds from the opening of the first segment used (the trace's start, unless the ring
   overwrote it) to the last checkpoint, when the trace ends with an open segment
   (churn_trace_info.ends_open). */
double churn_analysis_checkpoint_s(const churn_analysis *a);
/* A sampled trace: one line that says its figures are estimates and how close, in buf;
   returns 1 (0 for a trace that is not sampled). */
int churn_analysis_estimate_note(const churn_analysis *a, char *buf, size_t len);

/* Fits growth and trends over epochs first..last only (the steady window found by an
   earlier pass): call after churn_analysis_init, before the pass. */
void churn_analysis_fit(churn_analysis *a, uint64_t first, uint64_t last);

/* Call before decoding each used segment, in sequence order. */
void churn_analysis_segment(churn_analysis *a, const churn_segment_info *s);

/* The records.h visitor; ctx is the churn_analysis. */
void churn_analysis_record(void *ctx, const churn_record *r);

/* Closes the last epoch, samples growth through the window and counts what is left live,
   with the live-set pass that ran over the same segments. */
void churn_analysis_finish(churn_analysis *a, const churn_live_pass *p);

/* A callsite live at the peak (peak.h): its stack and what it had live there, weighted as
   callsite figures are (churn_site_weight). */
typedef struct churn_peak_row {
    uint64_t stack;
    int64_t count, bytes;
} churn_peak_row;

/* How the trace ended (growth.h), for what its live objects are called. */
static inline enum churn_ending churn_analysis_ending(const churn_analysis *a)
{
    if (!a->has_exit || a->went_on)
        return CHURN_ENDED_NOT;
    if (a->exit_how == CHURN_EXIT_SIGNAL || a->stop_signal)
        return CHURN_ENDED_BY_SIGNAL;
    return CHURN_ENDED_ITSELF;
}

/* The peak is known: the trace has events (CHURN_EVENTS=0 keeps only epoch sums, whose
   live figures at epoch ends are not the high-water mark between them). */
static inline int churn_peak_known(const churn_analysis *a)
{
    return a->events && !a->sample_bytes;
}

/* The callsites with bytes live at the peak, most bytes first; at most top (0 = all).  The
   caller frees the array. */
churn_peak_row *churn_peak_rows(const churn_analysis *a, size_t top, size_t *n);

/* How many objects one object of this stack stands for in callsite figures.  Under
   CHURN_STACK_SAMPLE=n an allocation had its stack walked with probability 1/n, so a
   callsite's counts times n estimate its allocations', and the objects without a stack (id
   0) belong to no callsite; every other figure counts each object once. */
static inline uint64_t churn_site_weight(const churn_analysis *a, uint64_t stack)
{
    return a->stack_sample <= 1 ? 1 : stack ? a->stack_sample : 0;
}

/* Under CHURN_SAMPLE_BYTES=n an allocation of size bytes was sampled with probability
   p = 1 - exp(-size/n): a sampled object stands for 1/p objects (docs/analyzer.md). */
static inline double churn_sample_weight(uint64_t n, uint64_t size)
{
    return size ? -1.0 / expm1(-(double)size / (double)n) : 1.0;
}

/* How many objects an object of the trace stands for in process-wide figures: one, or its
   sample weight in a sampled trace. */
static inline double churn_object_weight(const churn_analysis *a, uint64_t size)
{
    return a->sample_bytes ? churn_sample_weight(a->sample_bytes, size) : 1.0;
}

/* The same in callsite figures (churn_site_weight; 0: it belongs to no callsite). */
static inline double churn_site_weightf(const churn_analysis *a, uint64_t stack, uint64_t size)
{
    return a->sample_bytes ? churn_sample_weight(a->sample_bytes, size)
                           : (double)churn_site_weight(a, stack);
}

/* v objects (or bytes) times a weight, to the nearest integer; exact for whole weights. */
static inline uint64_t churn_scale(double w, uint64_t v)
{
    if (w == (double)(uint64_t)w)
        return v * (uint64_t)w;
    return (uint64_t)llround(w * (double)v);
}

static inline int churn_in_window(const churn_window *w, uint64_t epoch)
{
    return (!w->has_first || epoch >= w->first) && (!w->has_last || epoch <= w->last);
}

#endif
