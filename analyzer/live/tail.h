/*
 * Following a trace file while it is written: its segments in sequence order as the ring
 * gets them, and the open segment checkpoint by checkpoint (docs/format.md, "Open
 * segments"), handed over as record bytes that go on from one another.  Only what is new is
 * read: the next segment is where the writer puts it (after the last one, or at the start
 * of the ring), an open one's new bytes are checked against its header's checksum and
 * inflated by a zstd stream kept between polls.  When the file no longer holds the next
 * segment (the ring went round before it was read, a damaged segment), the reader's own scan
 * (reader.h) finds where to go on, and the sink is told that the state starts over there.
 */
#ifndef CHURN_LIVE_TAIL_H
#define CHURN_LIVE_TAIL_H

#include <stddef.h>
#include <stdint.h>

#include "base/warnings.h"
#include "read/reader.h"

typedef struct churn_tail churn_tail;

typedef struct churn_tail_sink {
    /* A segment begins.  restart: the segments before it were not read (it is the first one
       followed, or segments were lost before it), so the state starts from its carry. */
    void (*begin)(void *ctx, const churn_segment_info *s, int restart);
    /* More of the segment's record stream, raw[0, len), followed by CHURN_RECORDS_PADDING
       zero bytes; each call goes on where the last one ended, at a record's end.  A segment
       found damaged is left there: the next begin says restart. */
    void (*records)(void *ctx, const uint8_t *raw, size_t len);
    void *ctx;
} churn_tail_sink;

enum churn_tail_result {
    CHURN_TAIL_FAILED = -1,  /* the file cannot be followed; the reason is in err */
    CHURN_TAIL_IDLE = 0,     /* nothing new */
    CHURN_TAIL_READ = 1,     /* records were handed over; more may be there */
    CHURN_TAIL_REPLACED = 2, /* another file took the path (a new run): this one is done */
};

/* Follows path; the file need not exist yet. */
churn_tail *churn_tail_open(const char *path);
void churn_tail_close(churn_tail *t);

/* Reads what is new, up to about budget raw bytes.  Warnings (segments lost, damaged) go to
   w. */
enum churn_tail_result churn_tail_poll(churn_tail *t, const churn_tail_sink *sink,
                                       size_t budget, churn_warnings *w, char *err,
                                       size_t errlen);

/* The file header's fields once read (NULL before), with ends_open and checkpoint_ns of the
   segment being read. */
const churn_trace_info *churn_tail_info(const churn_tail *t);
const char *churn_tail_path(const churn_tail *t);
/* Why nothing was read yet ("" once a segment was): no file, no segment, a scan's reason. */
const char *churn_tail_waiting(const churn_tail *t);
/* Segments that were lost before they were read. */
uint64_t churn_tail_lost(const churn_tail *t);
/* CLOCK_MONOTONIC ns when the file was last seen to change (size or modification time). */
uint64_t churn_tail_changed_ns(const churn_tail *t);
/* The file's device and inode (0 before it was opened). */
void churn_tail_file_id(const churn_tail *t, uint64_t *dev, uint64_t *ino);

#endif
