/*
 * Opening a trace file: the file header, the scan for segments anywhere in the ring, their
 * checksums, their order by sequence number, and the decompression of one segment at a time
 * into its record stream (decoded by records.h).
 */
#ifndef CHURN_READER_H
#define CHURN_READER_H

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "read/records.h"
#include "base/warnings.h"

typedef struct churn_segment_info {
    uint64_t offset;     /* of the segment header in the file */
    uint64_t seq, first_epoch, last_epoch;
    uint32_t raw_bytes, zstd_bytes;
    /* An open segment (version 5): its frame so far, written at a checkpoint at
       checkpoint_ns (CLOCK_MONOTONIC); last_epoch is first_epoch. */
    int open;
    uint64_t checkpoint_ns;
    /* A delta segment (version 8, format.h): read only after the segments since a key one. */
    int delta;
} churn_segment_info;

typedef struct churn_trace_info {
    uint32_t version, flags, page_size;
    uint64_t ring_bytes, pid, start_realtime_ns, file_bytes;
    size_t segments_invalid;  /* candidate headers whose checks failed */
    size_t segments_gapped;   /* valid segments older than a gap in the sequence, not used */
    size_t segments_before_key; /* delta segments before the first key one kept, not used */
    /* The newest segment is an open one: the process ended without an exit the shim saw
       (or still runs), and the trace holds what it had at its last checkpoint.  Cleared
       when that segment turns out damaged as it is decompressed. */
    int ends_open;
    uint64_t checkpoint_ns;   /* CLOCK_MONOTONIC of that checkpoint */
    char producer[24];        /* version of the libchurn that wrote it; "" in older traces */
} churn_trace_info;

typedef struct churn_trace churn_trace;

/* The checks of a trace's file header (its magic, version and checksum): 0 with its fields
   in *info, or -1 with a one-line reason in err.  The reader's, and the follower's of a trace
   still being written (live/tail.c). */
int churn_file_header_check(const churn_file_header *h, churn_trace_info *info, char *err,
                            size_t errlen);
/* 1 with the version in info->producer when the producer frame's checks hold, else 0. */
int churn_producer_frame_check(const churn_producer_frame *p, churn_trace_info *info);

/* Feeds in[0, n) to d, which must give exactly want bytes into out and then end its frame
   (frame_end: a closed segment) or stand between blocks (an open segment's checkpoint).  out
   has want + CHURN_RECORDS_PADDING bytes, the padding zeroed.  0, or -1 with the damage in
   why.  The reader's open segments, and the follower's segments (live/tail.c), whose stream
   goes on across checkpoints. */
int churn_inflate_exact(ZSTD_DCtx *d, const uint8_t *in, size_t n, uint8_t *out, size_t want,
                        int frame_end, char *why, size_t whylen);

/* Opens and indexes path.  On a fatal problem returns NULL with a one-line reason in err;
   problems that leave usable segments become warnings. */
churn_trace *churn_trace_open(const char *path, churn_warnings *w, char *err, size_t errlen);
void churn_trace_close(churn_trace *t);

const churn_trace_info *churn_trace_info_of(const churn_trace *t);
size_t churn_trace_segments(const churn_trace *t);
const churn_segment_info *churn_trace_segment(const churn_trace *t, size_t i);

/* Decompresses segment i (in sequence order) into *buf (capacity *cap, grown as needed) and
   sets *len; the CHURN_RECORDS_PADDING bytes after it are zero.  Returns 0, or -1 with the
   reason the segment is skipped in why.  Uses the trace's one decompression context: one
   thread at a time. */
int churn_trace_decompress(churn_trace *t, size_t i, uint8_t **buf, size_t *cap, size_t *len,
                           char *why, size_t whylen);

/* The first bytes of segment i's record stream, for a look before the full pass: up to
   cap - CHURN_RECORDS_PADDING bytes into buf, then the padding.  Returns how many (0 when the
   segment does not decompress). */
size_t churn_trace_peek(churn_trace *t, size_t i, uint8_t *buf, size_t cap);

/* Feeds the records of segment i, decompressed into raw[0, len) and padded, to fn and the
   live-set operations of its heap events to live, decoding with d (raw is only read).
   Returns 0 when the whole segment decoded, -1 when it stopped early; then a warning says
   why. */
int churn_trace_decode(const churn_trace *t, size_t i, const uint8_t *raw, size_t len,
                       churn_decoder *d, churn_record_fn fn, void *ctx, churn_live_sink *live,
                       churn_warnings *w);

#endif
