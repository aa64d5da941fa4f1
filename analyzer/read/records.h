/*
 * Decoding of one segment's record stream (see include/churn/format.h) into a sequence of
 * churn_record values handed to a visitor.  Every count is checked against the bytes that
 * remain before anything is sized from it, so a damaged stream can only stop decoding early.
 */
#ifndef CHURN_RECORDS_H
#define CHURN_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "churn/coding.h"
#include "churn/format.h"
#include "heap/livepass.h"
#include "heap/peak.h"

typedef struct churn_carry_entry {
    uint64_t stack, live_count, live_bytes;
} churn_carry_entry;

typedef struct churn_class_entry {
    uint64_t cls, allocs, frees, alloc_bytes, free_bytes;
} churn_class_entry;

typedef struct churn_callsite_entry {
    uint64_t stack, allocs, frees, alloc_bytes, free_bytes, live_count, live_bytes;
} churn_callsite_entry;

typedef struct churn_epoch_summary {
    uint64_t epoch, start_ns, wall_ns, cpu_ns, rss_bytes;
    uint64_t allocs, frees, alloc_bytes, free_bytes, late_events;
    uint64_t live_count, live_bytes;
    size_t n_classes, n_callsites, n_counters;
    const churn_class_entry *classes;
    const churn_callsite_entry *callsites;
    const uint64_t *counters;
} churn_epoch_summary;

/* tag is the record class for events (CHURN_REC_ALLOC, ...; kind holds the low nibble) and the
   exact tag otherwise.  Events also carry the thread and epoch current in the stream.  The
   event coding is undone here: a full free arrives with its fields and a free of unknown
   address or a page-level call as itself.  Allocations and the short frees of objects
   allocated in the same epoch are not handed over one by one but counted, per allocation
   info, into CHURN_REC_COUNTS records (see there); a short free of an older object arrives
   as a full CHURN_REC_FREE. */
#define CHURN_REC_COUNTS 0x100 /* the decoder's own, never in a trace */

typedef struct churn_record {
    unsigned tag;
    unsigned kind;
    uint64_t tid;
    uint64_t epoch;
    union {
        struct { uint64_t seq, epoch, ns; } segment_start;
        struct {
            uint64_t id, bias, start, end;
            uint64_t unloaded; /* 0: loaded (always 0 in version 1) */
            const uint8_t *build_id;
            size_t build_id_len;
            const char *path;
        } module;
        struct {
            uint64_t id;
            size_t depth;
            const uint64_t *ips;
            uint64_t generation; /* UINT64_MAX in version 1: the newest modules */
            uint64_t ref;        /* 0, or the stack whose outermost frames it shares */
            size_t shared;       /* how many (ips holds them too) */
        } stack;
        struct {
            const char *name;
            uint64_t page_size;
            size_t n_counters;
            const char *const *counters;
        } allocator;
        struct {
            uint64_t live_count, live_bytes;
            size_t n;
            const churn_carry_entry *entries;
        } carry;
        struct { size_t n; const uint64_t *sizes, *span_bytes; } size_classes;
        struct { uint64_t count, reason; } dropped;
        struct { uint64_t count; } unordered;
        struct { uint64_t n; } stack_sample;
        struct { uint64_t n; } sample_bytes;
        struct { uint64_t n; } short_stacks;
        struct { uint64_t epoch, age_ns; } counters_stale;
        struct { uint64_t how, detail; } exit;
        /* temporary: the previous heap event of the stream was this object's allocation */
        struct { uint64_t addr, size, slack, stack, age; int temporary; } free;
        struct { uint64_t addr; } free_unknown;
        struct { uint64_t addr, length, a, b, stack; int internal; } map;
        struct {
            uint64_t start, size;
            const char *name;
        } code; /* version 6; kind CHURN_CODE_RANGE */
        struct {
            uint64_t id;      /* names the frames churn_py_frame_code gives this id */
            const char *name; /* "qualname:file", not empty */
        } py_code;            /* version 7; kind CHURN_CODE_PY */
        churn_epoch_summary epoch_end;
        /* Events of r->epoch with one allocation info (size, slack, stack): allocs
           allocations, reallocs of them of kind realloc, and frees short frees of objects
           allocated in that epoch, temporary of those frees right after their allocation
           (the stream's previous heap event).  Counting commutes inside an epoch, so the record may
           come after other events of the epoch that followed the counted ones, and after
           stacks, modules and allocator names; it comes before the next event of another
           epoch and before any SEGMENT_START, CARRY, DROPPED, EXIT or EPOCH_END. */
        struct { uint64_t size, slack, stack, allocs, reallocs, frees, temporary; } counts;
    } u;
} churn_record;

typedef void (*churn_record_fn)(void *ctx, const churn_record *r);

/* An allocation info of the current segment, with its events not yet handed over. */
typedef struct churn_alloc_info {
    uint64_t size, usable, stack;
    uint32_t slack;     /* churn_slack32(usable - size) */
    uint64_t *lifo;     /* its usable size's LIFO in the coder */
    uint32_t peak_site; /* its stack's in the peak tracker */
    uint32_t allocs, reallocs, frees, temporary;
} churn_alloc_info;

/* An allocation of the current segment, by its number: what a short free names.  addr 0
   marks one already freed (no allocation is ever at address 0). */
typedef struct churn_segment_alloc {
    uint64_t addr, epoch;
    uint32_t info;
    uint32_t op;        /* low bits of the serial number of its live-set insertion: a
                           segment has far fewer than 2^32 operations, and only its own
                           allocations are looked up */
} churn_segment_alloc;

/* An allocation that left the ring below while still live, keyed by its number + 1. */
typedef struct churn_spilled_alloc {
    uint64_t key;
    churn_segment_alloc a;
} churn_spilled_alloc;

/* The newest CHURN_RECENT_ALLOCS allocations of the segment sit in a ring by number; older
   ones that are still live move to a hash table.  Most short frees name a recent allocation,
   and memory stays proportional to the live objects, not to the segment's length. */
#define CHURN_RECENT_ALLOCS 16384u

/* A stack defined lately in the segment, which a STACK record may share frames with. */
typedef struct churn_recent_stack {
    uint64_t id;
    size_t depth;
    uint64_t ips[CHURN_STACK_MAX_DEPTH];
} churn_recent_stack;

/* Per-segment coding state and scratch arrays, reused across segments so decoding does not
   allocate per record. */
typedef struct churn_decoder {
    uint32_t version;   /* of the trace (CHURN_FORMAT_VERSION when left 0) */
    churn_peak *peak;   /* gets every heap event in order; the decoder's own when left NULL */
    churn_peak own_peak;
    /* The previous heap event of the stream (across segments), when it was an allocation:
       a free of that very object next is a temporary allocation.  addr 0: it was not. */
    uint64_t prev_addr, prev_size, prev_stack, prev_epoch;
    churn_recent_stack *recent_stacks; /* CHURN_STACK_REFS, a ring */
    size_t recent_stack_count;
    churn_coder *coder;
    churn_alloc_info *infos; size_t ninfos, infos_cap;
    uint32_t *counted; size_t ncounted, counted_cap; /* infos with events to hand over */
    churn_segment_alloc *recent; /* CHURN_RECENT_ALLOCS entries, by number modulo their count */
    churn_spilled_alloc *spilled; size_t spilled_mask, spilled_count;
    uint64_t *ips; size_t ips_cap;
    churn_carry_entry *carry; size_t carry_cap;
    churn_class_entry *classes; size_t classes_cap;
    churn_callsite_entry *callsites; size_t callsites_cap;
    uint64_t *counters; size_t counters_cap;
    const char **names; size_t names_cap;
    size_t *offsets; size_t offsets_cap;
    uint64_t *pairs; size_t pairs_cap; /* size classes: sizes, then span bytes */
    char *text; size_t text_len, text_cap; /* the current record's strings */
    uint64_t tid, epoch; /* the stream's thread and epoch where the last call ended */
} churn_decoder;

/* The decoder reads varints of events ahead without checking for the end of the stream,
   which must be followed by this many zero bytes: a record's tag and two varints. */
#define CHURN_RECORDS_PADDING (1 + 2 * CHURN_VARINT_MAX)

/* Decodes buf[0, len), a segment's record stream, which is only read, handing records to fn
   and the live-set operations of its heap events to live.  Returns 0 when the whole stream
   decoded; otherwise -1 with *bad_offset and *bad_tag telling where it stopped (what came
   before was handed over). */
int churn_decode_records(churn_decoder *d, const uint8_t *buf, size_t len, churn_record_fn fn,
                         void *ctx, churn_live_sink *live, size_t *bad_offset,
                         unsigned *bad_tag);

/* Decodes buf[0, len) as more of the segment the last call decoded: the stream goes on where
   that call ended, which was the end of a record (as an open segment's checkpoint is), with
   the coding state, the thread and the epoch it left.  A follower reads an open segment so,
   one checkpoint's new records at a time.  Same results as churn_decode_records. */
int churn_decode_more(churn_decoder *d, const uint8_t *buf, size_t len, churn_record_fn fn,
                      void *ctx, churn_live_sink *live, size_t *bad_offset, unsigned *bad_tag);

void churn_decoder_free(churn_decoder *d);

#endif
