/* The record encoder (encode.c): every record of a segment's stream is written there, the
   reader's side of the same format being analyzer/read/records.c.  Private to writer.c, which
   keeps the figures the records carry and compresses the stream. */
#ifndef CHURN_ENCODE_H
#define CHURN_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "churn/coding.h"
#include "shim.h"

typedef struct {
    uint64_t allocs, frees, alloc_bytes, free_bytes;
} churn_counts;

/* The writer's figures of one callsite (stack id), with the encoder's note of where its
   definition was last written. */
typedef struct {
    churn_counts epoch;       /* this epoch's activity */
    uint64_t live_count, live_bytes;
    uint32_t dirty;           /* in the dirty list of the open epoch */
    uint32_t emitted_in;      /* churn_enc.segments when the definition was last written */
} churn_site;

typedef struct {
    uint8_t *buf;             /* room for the segment header, then the record stream */
    size_t len, cap;
} churn_buf;

typedef struct {
    churn_buf raw;            /* records not yet given to zstd (writer.c takes them) */
    /* Segments opened so far, in this process and every trace it wrote (a second `churn
       attach` goes on counting): a segment that failed to be written does not count its
       number twice, as its sequence number would.  A definition or a name written in a
       segment numbered key_in or later is in the open segment or one it follows. */
    uint32_t segments;
    uint32_t key_in;          /* the number of the last key segment (format.h) */
    int key;                  /* the open segment is a key segment */
    uint32_t classes_in;      /* segments when the size classes were last written */
    churn_coder coder;
    uint64_t cur_epoch;
    pid_t cur_tid;
    uint32_t recent_stacks[CHURN_STACK_REFS]; /* defined last in this segment, a ring */
    int64_t info_stack; /* the stack id of the segment's last ALLOC_INFO */
    unsigned recent_count;
} churn_encoder;

extern churn_encoder churn_enc;

int churn_buf_grow(churn_buf *b, size_t more);
static inline int churn_buf_reserve(churn_buf *b, size_t more)
{
    return CHURN_LIKELY(b->len + more <= b->cap) ? 0 : churn_buf_grow(b, more);
}

/* A new segment's stream: empty, the coder at its start.  A key segment defines every
   stack anew; a delta segment those that no segment since the last key segment defined. */
void churn_enc_segment_begin(int key);
/* Whether a definition or name last written in segment number `in` is still in force. */
static inline int churn_enc_written(uint32_t in)
{
    return in && in >= churn_enc.key_in;
}
/* Returns 0 when there was no room: the segment is not open. */
int churn_emit_segment_start(uint64_t seq, uint64_t first_epoch, uint64_t open_ns);
void churn_emit_allocator(void);
void churn_emit_stack_sample(uint32_t every);
void churn_emit_sample_bytes(uint64_t mean); /* CHURN_REC_SAMPLE_BYTES */
/* Sent as soon as the allocator can be asked (never asked yet on the final path: asking
   would call the allocator), and again in every later segment. */
void churn_emit_size_classes(int final_path);
void churn_emit_modules(void);
/* A CODE record of kind CHURN_CODE_RANGE: the name a runtime's perf map gives the code at
   [start, start + size) (codemap.c); 0 when there is no room. */
int churn_emit_code(uint64_t start, uint64_t size, const char *name, size_t len);
/* A CODE record of kind CHURN_CODE_PY: "qualname:file", the name of every frame of the
   Python code object `code` (pyframes.c); 0 when there is no room. */
int churn_emit_py_code(uint32_t code, const char *name, size_t len);
/* The live totals; in a key segment also every stack's live objects, with its definition. */
void churn_emit_carry(churn_site *sites, size_t nsites, uint64_t live_count,
                      uint64_t live_bytes);
/* Writes the stack's definition, once from one key segment to the next. */
void churn_define_stack(churn_site *sites, uint32_t id);
static inline int churn_enc_stack_due(const churn_site *s)
{
    return !churn_enc_written(s->emitted_in);
}
static inline void churn_emit_stack(churn_site *sites, size_t nsites, uint32_t id)
{
    if (id && id < nsites && churn_enc_stack_due(&sites[id]))
        churn_define_stack(sites, id);
}
/* An event's records; returns 0 when it could not be written (libchurn's memory ran out),
   counted as dropped by the caller.  An allocation, a free, and the other types each have
   their own: the writer's drain knows the type, and takes no test of it.  An allocation's
   note is its new entry in the live map, a free's live the entry it took from there. */
int churn_encode_alloc(const churn_event *ev, pid_t tid, uint64_t epoch, churn_live *note);
int churn_encode_free(const churn_event *ev, pid_t tid, uint64_t epoch, const churn_live *live);
/* FREE_UNKNOWN and MAP */
int churn_encode_other(const churn_event *ev, pid_t tid, uint64_t epoch);
/* Returns the count written, 0 when none or no room. */
uint64_t churn_emit_drop(uint64_t count, unsigned reason);
void churn_emit_short_stacks(uint64_t cut);
void churn_emit_counters_stale(uint64_t epoch, uint64_t age_ns);

/* What an EPOCH_END record carries: the epoch's totals, its dirty size classes and
   callsites, and the allocator's counters. */
typedef struct {
    uint64_t epoch, start_ns, duration_ns, cpu_ns, rss;
    const churn_counts *totals;
    uint64_t late, live_count, live_bytes;
    const churn_counts *classes;   /* CHURN_SIZE_CLASSES of them */
    const uint8_t *class_dirty;
    const uint32_t *dirty;
    size_t ndirty;
    churn_site *sites;
    size_t nsites;
    const uint64_t *counters;
    size_t ncounters;
} churn_epoch_end;
void churn_emit_epoch_end(const churn_epoch_end *e);
/* Returns 1 when the record was written. */
int churn_emit_unordered(uint64_t count);
void churn_emit_exit(uint64_t how, int64_t detail);

#endif
