#include "live/tail.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "base/util.h"
#include "churn/format.h"
#include "read/records.h"

/* A file that changed while nothing new was found for this long is scanned again. */
#define STUCK_NS 2000000000ull
/* Scans before the first segment, and after being stuck, at most this often. */
#define SCAN_EVERY_NS 1000000000ull


struct churn_tail {
    char *path;
    int fd;
    uint64_t dev, ino;
    int have_header;
    churn_trace_info info;
    uint64_t data_start; /* where segments start, and the ring wraps to */
    uint64_t size, mtime_ns, changed_ns;
    char waiting[300];
    /* Where the follow is. */
    int started;     /* a segment was begun: expect is meaningful */
    int restart;     /* the next begin starts the state over */
    uint64_t expect; /* the sequence number of the next segment to begin */
    uint64_t pos;    /* where it goes unless the ring wraps (has_pos) */
    int has_pos;
    uint64_t found_at; /* where the last scan found it (has_found) */
    int has_found;
    int scan_due; /* a candidate held a newer segment: the file must be scanned */
    /* The segment being read. */
    int in_seg;
    churn_segment_info seg;
    uint64_t zdone, rdone; /* its bytes read so far, compressed and raw */
    uint32_t zcrc, rcrc;   /* their checksums */
    ZSTD_DCtx *stream;
    uint64_t progress_ns, scan_ns;
    uint64_t lost;
    /* Delta segments passed over before a key one, where the state has to start over. */
    uint64_t skipped, skipped_from;
    uint8_t *zbuf, *rbuf;
    size_t zcap, rcap;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

churn_tail *churn_tail_open(const char *path)
{
    churn_tail *t = churn_xcalloc(1, sizeof *t);
    t->path = churn_xstrdup(path);
    t->fd = -1;
    t->restart = 1;
    t->changed_ns = now_ns();
    snprintf(t->waiting, sizeof t->waiting, "no trace file yet");
    return t;
}

void churn_tail_close(churn_tail *t)
{
    if (!t)
        return;
    if (t->fd >= 0)
        close(t->fd);
    ZSTD_freeDCtx(t->stream);
    free(t->zbuf);
    free(t->rbuf);
    free(t->path);
    free(t);
}

const churn_trace_info *churn_tail_info(const churn_tail *t)
{
    return t->have_header ? &t->info : NULL;
}

const char *churn_tail_path(const churn_tail *t)
{
    return t->path;
}

const char *churn_tail_waiting(const churn_tail *t)
{
    return t->started ? "" : t->waiting;
}

uint64_t churn_tail_lost(const churn_tail *t)
{
    return t->lost;
}

uint64_t churn_tail_changed_ns(const churn_tail *t)
{
    return t->changed_ns;
}

void churn_tail_file_id(const churn_tail *t, uint64_t *dev, uint64_t *ino)
{
    *dev = t->dev;
    *ino = t->ino;
}

static int read_at(const churn_tail *t, void *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(t->fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

/* The file header, once the writer has written it: as the reader checks it (reader.c). */
static int read_file_header(churn_tail *t, char *err, size_t errlen)
{
    churn_file_header h;
    if (t->size < sizeof h || read_at(t, &h, sizeof h, 0) != 0) {
        snprintf(t->waiting, sizeof t->waiting, "the trace file has no header yet");
        return 0;
    }
    if (churn_file_header_check(&h, &t->info, err, errlen))
        return -1;
    t->data_start = CHURN_FILE_HEADER_BYTES;
    churn_producer_frame p;
    if (t->size >= CHURN_FILE_HEADER_BYTES + sizeof p &&
        read_at(t, &p, sizeof p, CHURN_FILE_HEADER_BYTES) == 0 &&
        churn_producer_frame_check(&p, &t->info)) {
        t->data_start += sizeof p;
    } else if (t->size < CHURN_FILE_HEADER_BYTES + sizeof p) {
        /* the producer frame may still be on its way; segments come after it */
        snprintf(t->waiting, sizeof t->waiting, "the trace file has no segment yet");
        return 0;
    }
    t->have_header = 1;
    return 1;
}

/* Opens the file when it is there, notes whether it changed, and whether another file took
   its path.  Returns 1 when it can be read, 0 to wait, CHURN_TAIL_REPLACED, or -1. */
static int look(churn_tail *t, char *err, size_t errlen)
{
    struct stat st;
    if (t->fd < 0) {
        t->fd = churn_open_regular(t->path);
        if (t->fd < 0) {
            if (errno == ENOENT) {
                snprintf(t->waiting, sizeof t->waiting, "no trace file yet");
                return 0;
            }
            snprintf(err, errlen, "%s",
                     errno == EINVAL ? "not a regular file" : strerror(errno));
            return -1;
        }
        if (fstat(t->fd, &st) != 0) {
            snprintf(err, errlen, "%s", strerror(errno));
            return -1;
        }
        t->dev = (uint64_t)st.st_dev;
        t->ino = (uint64_t)st.st_ino;
    }
    if (fstat(t->fd, &st) != 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        return -1;
    }
    uint64_t mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
    if ((uint64_t)st.st_size != t->size || mtime != t->mtime_ns) {
        t->size = (uint64_t)st.st_size;
        t->mtime_ns = mtime;
        t->changed_ns = now_ns();
    }
    t->info.file_bytes = t->size;
    struct stat now;
    if (stat(t->path, &now) == 0 &&
        ((uint64_t)now.st_ino != t->ino || (uint64_t)now.st_dev != t->dev)) {
        if (t->have_header)
            return CHURN_TAIL_REPLACED;
        close(t->fd); /* the old file never got a header: take the new one */
        t->fd = -1;
        return look(t, err, errlen);
    }
    if (!t->have_header)
        return read_file_header(t, err, errlen);
    return 1;
}

/* A segment header at off whose checks hold (the reader's (1) and (2), less the search for
   headers inside the payload, which the payload's checksum stands for here), with its
   payload's checksum. */
typedef struct head {
    churn_segment_info s;
    uint32_t crc;
} head;

/* Whether [off, off + len) is in the file, asking its size again when that lies past the size
   seen last: the writer writes a segment's bytes before the header that counts them, and a
   scan made since the last look may have found a segment written after it. */
static int within(churn_tail *t, uint64_t off, uint64_t len)
{
    struct stat st;
    if (off + len > t->size && fstat(t->fd, &st) == 0 && (uint64_t)st.st_size > t->size)
        t->size = (uint64_t)st.st_size;
    return off + len <= t->size;
}

static int header_at(churn_tail *t, uint64_t off, head *out)
{
    churn_segment_header h;
    if (off < t->data_start || !within(t, off, sizeof h) || read_at(t, &h, sizeof h, off) != 0)
        return 0;
    if (h.frame_magic != CHURN_SKIPPABLE_MAGIC || h.frame_size != sizeof h - 8)
        return 0;
    int open = 0;
    uint64_t checkpoint_ns = 0;
    if (churn_segment_is_delta(h.magic) && t->info.version < 8)
        return 0;
    if (churn_segment_kind_magic(h.magic) == CHURN_SEGMENT_MAGIC) {
        if (churn_segment_header_crc(&h) != h.header_crc)
            return 0;
    } else {
        churn_open_segment_header o;
        memcpy(&o, &h, sizeof o);
        if (churn_segment_kind_magic(o.magic) != CHURN_SEGMENT_OPEN_MAGIC ||
            t->info.version < 5 || churn_open_segment_header_crc(&o) != o.header_crc)
            return 0;
        open = 1;
        checkpoint_ns = o.checkpoint_ns;
        h.last_epoch = o.first_epoch;
    }
    if (h.version != t->info.version || h.raw_bytes > CHURN_SEGMENT_MAX_RAW ||
        h.zstd_bytes < 4 || !within(t, off, sizeof h + h.zstd_bytes))
        return 0;
    out->s = (churn_segment_info){off,          h.seq,         h.first_epoch,
                                  h.last_epoch, h.raw_bytes,   h.zstd_bytes,
                                  open,         checkpoint_ns, churn_segment_is_delta(h.magic)};
    out->crc = h.payload_crc;
    return 1;
}

/* Bytes [from, to) of the payload of the segment at off, into t->zbuf. */
static int read_payload(churn_tail *t, uint64_t off, uint64_t from, uint64_t to)
{
    churn_reserve(&t->zbuf, &t->zcap, (size_t)(to - from) + 1, 1);
    return read_at(t, t->zbuf, (size_t)(to - from), off + sizeof(churn_segment_header) + from);
}

static int zstd_magic_at(const uint8_t *p)
{
    uint32_t magic;
    memcpy(&magic, p, 4);
    return magic == ZSTD_MAGICNUMBER;
}

/* Feeds in[0, n) to the segment's zstd stream, which must give exactly want raw bytes into
   t->rbuf (churn_inflate_exact, the reader's check).  Returns 0, or -1 with why. */
static int inflate(churn_tail *t, const uint8_t *in, size_t n, size_t want, int frame_end,
                   char *why, size_t whylen)
{
    churn_reserve(&t->rbuf, &t->rcap, want + CHURN_RECORDS_PADDING, 1);
    return churn_inflate_exact(t->stream, in, n, t->rbuf, want, frame_end, why, whylen);
}

static void hand_over(churn_tail *t, const churn_tail_sink *sink, const uint8_t *raw,
                      size_t len, size_t *spent)
{
    if (!len)
        return;
    t->rcrc = churn_crc32(t->rcrc, raw, len);
    t->rdone += len;
    *spent += len;
    sink->records(sink->ctx, raw, len);
}

static void begin(churn_tail *t, const churn_tail_sink *sink, const churn_segment_info *s)
{
    t->in_seg = 1;
    t->seg = *s;
    t->zdone = t->rdone = 0;
    t->zcrc = t->rcrc = 0;
    if (!t->stream)
        t->stream = ZSTD_createDCtx();
    if (!t->stream) {
        fputs("churn: out of memory\n", stderr);
        exit(1);
    }
    ZSTD_DCtx_reset(t->stream, ZSTD_reset_session_only);
    t->started = 1;
    t->expect = s->seq;
    t->has_found = 0;
    t->info.ends_open = s->open;
    t->info.checkpoint_ns = s->checkpoint_ns;
    int restart = t->restart;
    t->restart = 0;
    sink->begin(sink->ctx, s, restart);
}

static void finish(churn_tail *t, const churn_segment_info *s, int damaged)
{
    t->in_seg = 0;
    t->info.ends_open = 0;
    t->expect = t->seg.seq + 1;
    if (damaged) {
        t->restart = 1; /* the next segment's carry, not half of this one, goes on */
        t->has_pos = 0;
    } else {
        t->pos = s->offset + sizeof(churn_segment_header) + s->zstd_bytes;
        t->has_pos = 1;
    }
}

static int damaged(churn_tail *t, churn_warnings *w, const char *why)
{
    churn_warn(w,
               "segment %llu: %s; the rest of it is not read, and the state starts over at the "
               "next key segment's carry",
               (unsigned long long)t->seg.seq, why);
    finish(t, &t->seg, 1);
    return 1;
}

/* The segment's closed copy h, in its place or elsewhere: what was read of the segment so far
   must be its start, in the compressed frame (the same frame, closed) or in the records (a
   frame compressed again).  Returns 1 when done with the segment, 0 to try again later. */
static int close_from(churn_tail *t, const churn_tail_sink *sink, const head *h,
                      churn_warnings *w, size_t *spent)
{
    char why[160];
    const churn_segment_info *s = &h->s;
    if (s->zstd_bytes < t->zdone || s->raw_bytes < t->rdone)
        return damaged(t, w, "its closed header counts less than its checkpoints did");
    size_t want = s->raw_bytes - t->rdone;
    /* In its place the bytes read are its start: only the rest is read. */
    if (s->offset == t->seg.offset &&
        read_payload(t, s->offset, t->zdone, s->zstd_bytes) == 0 &&
        churn_crc32(t->zcrc, t->zbuf, s->zstd_bytes - t->zdone) == h->crc &&
        (t->zdone || zstd_magic_at(t->zbuf))) {
        if (inflate(t, t->zbuf, s->zstd_bytes - t->zdone, want, 1, why, sizeof why) != 0)
            return damaged(t, w, why);
        hand_over(t, sink, t->rbuf, want, spent);
        finish(t, s, 0);
        return 1;
    }
    if (read_payload(t, s->offset, 0, s->zstd_bytes) != 0 ||
        churn_crc32(0, t->zbuf, s->zstd_bytes) != h->crc)
        return 0; /* being overwritten: a scan says what is left */
    if (!zstd_magic_at(t->zbuf))
        return damaged(t, w, "its payload is not a zstd frame");
    if (churn_crc32(0, t->zbuf, t->zdone) == t->zcrc) {
        if (inflate(t, t->zbuf + t->zdone, s->zstd_bytes - t->zdone, want, 1, why, sizeof why))
            return damaged(t, w, why);
        hand_over(t, sink, t->rbuf, want, spent);
    } else {
        ZSTD_DCtx_reset(t->stream, ZSTD_reset_session_only);
        if (inflate(t, t->zbuf, s->zstd_bytes, s->raw_bytes, 1, why, sizeof why))
            return damaged(t, w, why);
        if (churn_crc32(0, t->rbuf, t->rdone) != t->rcrc)
            return damaged(t, w, "its closed copy's records differ from its checkpoints'");
        memmove(t->rbuf, t->rbuf + t->rdone, want + CHURN_RECORDS_PADDING);
        hand_over(t, sink, t->rbuf, want, spent);
    }
    finish(t, s, 0);
    return 1;
}

/* A new checkpoint of the open segment: its new bytes.  Returns 1 when records were handed
   over (or the segment was found damaged), 0 when there is nothing new yet. */
static int checkpoint(churn_tail *t, const churn_tail_sink *sink, const head *h,
                      churn_warnings *w, size_t *spent)
{
    char why[160];
    const churn_segment_info *s = &h->s;
    if (s->zstd_bytes < t->zdone || s->raw_bytes < t->rdone)
        return damaged(t, w, "a checkpoint counts less than the one before it");
    if (s->zstd_bytes == t->zdone)
        return 0;
    size_t n = s->zstd_bytes - t->zdone;
    if (read_payload(t, s->offset, t->zdone, s->zstd_bytes) != 0)
        return 0;
    uint32_t crc = churn_crc32(t->zcrc, t->zbuf, n);
    if (crc != h->crc)
        return 0; /* overwritten under it: a scan says what is left */
    if (!t->zdone && !zstd_magic_at(t->zbuf))
        return damaged(t, w, "its payload is not a zstd frame");
    size_t want = s->raw_bytes - t->rdone;
    if (inflate(t, t->zbuf, n, want, 0, why, sizeof why) != 0)
        return damaged(t, w, why);
    t->zdone = s->zstd_bytes;
    t->zcrc = crc;
    t->seg.checkpoint_ns = s->checkpoint_ns;
    t->info.checkpoint_ns = s->checkpoint_ns;
    hand_over(t, sink, t->rbuf, want, spent);
    return 1;
}

/* Where a segment the writer put elsewhere than where it was expected may be. */
static size_t candidates(const churn_tail *t, uint64_t *at)
{
    size_t n = 0;
    if (t->has_found)
        at[n++] = t->found_at;
    if (t->has_pos)
        at[n++] = t->pos;
    at[n++] = t->data_start;
    return n;
}

/* Returns 1 on progress, 0 when there is nothing new. */
static int advance(churn_tail *t, const churn_tail_sink *sink, churn_warnings *w, size_t *spent)
{
    head h;
    if (header_at(t, t->seg.offset, &h) && h.s.seq == t->seg.seq)
        return h.s.open ? checkpoint(t, sink, &h, w, spent) : close_from(t, sink, &h, w, spent);
    /* It left its place: closed where the ring wraps (it outgrew the place its first
       checkpoint chose), or overwritten (then a scan finds what is left). */
    uint64_t at[3];
    size_t n = candidates(t, at);
    for (size_t i = 0; i < n; i++)
        if (at[i] != t->seg.offset && header_at(t, at[i], &h) && h.s.seq == t->seg.seq &&
            !h.s.open)
            return close_from(t, sink, &h, w, spent);
    return 0;
}

/* Where the state starts over, only a key segment can begin (format.h): a delta segment
   there is passed over once it is closed.  Returns 1 when it was, 0 to wait for its close. */
static int pass_over(churn_tail *t, const churn_segment_info *s)
{
    if (s->open)
        return 0;
    if (!t->skipped++)
        t->skipped_from = s->seq;
    t->expect = s->seq + 1;
    t->pos = s->offset + sizeof(churn_segment_header) + s->zstd_bytes;
    t->has_pos = 1;
    t->has_found = 0;
    return 1;
}

/* Returns 1 when the next segment began (or a delta segment was passed over), 0 when it is
   not there yet, -1 when a newer one is where it should be (it was lost, or is elsewhere: a
   scan tells). */
static int begin_next(churn_tail *t, const churn_tail_sink *sink, churn_warnings *w)
{
    uint64_t at[3];
    size_t n = candidates(t, at);
    head best, h;
    int have = 0, newer = 0;
    for (size_t i = 0; i < n; i++) {
        if (!header_at(t, at[i], &h))
            continue;
        if (h.s.seq == t->expect) {
            if (!have || (best.s.open && !h.s.open))
                best = h;
            have = 1;
        } else if (h.s.seq > t->expect) {
            newer = 1;
        }
    }
    if (have && t->restart && best.s.delta)
        return pass_over(t, &best.s);
    if (have) {
        if (t->skipped)
            churn_warn(w,
                       "delta segments %llu..%llu not read: the state starts over at key "
                       "segment %llu",
                       (unsigned long long)t->skipped_from, (unsigned long long)best.s.seq - 1,
                       (unsigned long long)best.s.seq);
        t->skipped = 0;
        begin(t, sink, &best.s);
        return 1;
    }
    return newer ? -1 : 0;
}

/* The reader's scan of the whole file (reader.h) says where to go on: the segment expected,
   or the oldest one after it that is left.  Returns 1 when it found one. */
static int scan(churn_tail *t, churn_warnings *w)
{
    t->scan_ns = now_ns();
    churn_warnings quiet = {0}; /* the scan's own: damage the follow reports when it meets it */
    char err[256];
    churn_trace *tr = churn_trace_open(t->path, &quiet, err, sizeof err);
    churn_warnings_free(&quiet);
    if (!tr) {
        snprintf(t->waiting, sizeof t->waiting, "%s", err);
        return 0;
    }
    /* The segment expected, wherever it is; after a gap the newest key one, so that the state
       starts over where the writer is, not at the oldest segment, the next it overwrites. */
    size_t n = churn_trace_segments(tr), i = 0;
    while (t->started && i < n && churn_trace_segment(tr, i)->seq < t->expect)
        i++;
    if (t->started && i < n && churn_trace_segment(tr, i)->seq != t->expect) {
        size_t key = n - 1; /* the newest key segment after the gap, else the newest */
        while (key > i && churn_trace_segment(tr, key)->delta)
            key--;
        i = churn_trace_segment(tr, key)->delta ? n - 1 : key;
    }
    int found = i < n;
    if (found) {
        const churn_segment_info *s = churn_trace_segment(tr, i);
        if (t->in_seg && s->seq != t->seg.seq)
            damaged(t, w, "the ring went round it before it was read to its end");
        if (t->started && !t->in_seg && s->seq > t->expect) {
            churn_warn(w,
                       "segments %llu..%llu were overwritten or damaged before they were read; "
                       "the state starts over at segment %llu's carry",
                       (unsigned long long)t->expect, (unsigned long long)s->seq - 1,
                       (unsigned long long)s->seq);
            t->lost += s->seq - t->expect;
            t->restart = 1;
        }
        if (!t->in_seg)
            t->expect = s->seq;
        t->found_at = s->offset;
        t->has_found = 1;
    }
    churn_trace_close(tr);
    return found;
}

enum churn_tail_result churn_tail_poll(churn_tail *t, const churn_tail_sink *sink,
                                       size_t budget, churn_warnings *w, char *err,
                                       size_t errlen)
{
    int r = look(t, err, errlen);
    if (r != 1)
        return r < 0                      ? CHURN_TAIL_FAILED
               : r == CHURN_TAIL_REPLACED ? CHURN_TAIL_REPLACED
                                          : CHURN_TAIL_IDLE;
    uint64_t now = now_ns();
    if (!t->progress_ns)
        t->progress_ns = now;
    /* The first segment is the oldest the ring still holds: a scan finds it. */
    if (!t->started && !t->has_found && (now - t->scan_ns < SCAN_EVERY_NS || !scan(t, w)))
        return CHURN_TAIL_IDLE;
    size_t spent = 0;
    int read = 0;
    while (spent < budget) {
        int k = t->in_seg ? advance(t, sink, w, &spent) : begin_next(t, sink, w);
        if (k > 0) {
            read = 1;
            continue;
        }
        /* the clock read now, not the poll's start: a scan in this loop is later than that */
        if (k < 0 && now_ns() - t->scan_ns >= SCAN_EVERY_NS && scan(t, w))
            continue;
        break;
    }
    if (read) {
        t->progress_ns = now;
        return CHURN_TAIL_READ;
    }
    /* The file changes and nothing new is where it should be: lost track (the ring went
       round faster than it was read), which the scan finds out. */
    if (t->changed_ns > t->progress_ns && now - t->progress_ns >= STUCK_NS &&
        now_ns() - t->scan_ns >= STUCK_NS)
        scan(t, w);
    return CHURN_TAIL_IDLE;
}
