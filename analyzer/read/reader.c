#include "read/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "churn/format.h"
#include "base/util.h"

struct churn_trace {
    const uint8_t *map;
    size_t size;
    churn_trace_info info;
    churn_segment_info *segs;
    size_t nsegs, segs_cap;
    ZSTD_DCtx *dctx;
    churn_warnings *warn;
};

static void set_err(char *err, size_t errlen, const char *msg)
{
    snprintf(err, errlen, "%s", msg);
}

int churn_file_header_check(const churn_file_header *h, churn_trace_info *info, char *err,
                            size_t errlen)
{
    if (h->frame_magic != CHURN_SKIPPABLE_MAGIC || memcmp(h->magic, CHURN_FILE_MAGIC, 8) != 0) {
        set_err(err, errlen, "not a churn trace (bad magic)");
        return -1;
    }
    if (h->version < CHURN_FORMAT_VERSION_MIN || h->version > CHURN_FORMAT_VERSION) {
        snprintf(err, errlen,
                 "unsupported trace format version %u (this analyzer reads %u to %u)",
                 h->version, CHURN_FORMAT_VERSION_MIN, CHURN_FORMAT_VERSION);
        return -1;
    }
    if (h->frame_size != sizeof *h - 8 || churn_file_header_crc(h) != h->header_crc) {
        set_err(err, errlen, "corrupt file header (checksum mismatch)");
        return -1;
    }
    info->version = h->version;
    info->flags = h->flags;
    info->page_size = h->page_size;
    info->ring_bytes = h->ring_bytes;
    info->pid = h->pid;
    info->start_realtime_ns = h->start_realtime_ns;
    return 0;
}

int churn_producer_frame_check(const churn_producer_frame *p, churn_trace_info *info)
{
    if (p->frame_magic != CHURN_SKIPPABLE_MAGIC || p->frame_size != sizeof *p - 8 ||
        memcmp(p->magic, CHURN_PRODUCER_MAGIC, 8) != 0 ||
        churn_producer_frame_crc(p) != p->crc || !memchr(p->version, '\0', sizeof p->version))
        return 0;
    memcpy(info->producer, p->version, sizeof p->version);
    return 1;
}

static int check_file_header(churn_trace *t, char *err, size_t errlen)
{
    churn_file_header h;
    if (t->size < sizeof h) {
        set_err(err, errlen, "not a churn trace (shorter than a file header)");
        return -1;
    }
    memcpy(&h, t->map, sizeof h);
    return churn_file_header_check(&h, &t->info, err, errlen);
}

/* The producer frame after the header, when the trace has one whose checks hold. */
static void read_producer(churn_trace *t)
{
    churn_producer_frame p;
    if (t->size < CHURN_FILE_HEADER_BYTES + sizeof p)
        return;
    memcpy(&p, t->map + CHURN_FILE_HEADER_BYTES, sizeof p);
    churn_producer_frame_check(&p, &t->info);
}

/* Where a segment header whose own checksum holds sits (the first check below): a closed
   segment's, or (version 5) an open one's, which *open says; both have the same size and
   their fields up to first_epoch and from raw_bytes on in the same places. */
static int segment_header_at(const churn_trace *t, size_t off, churn_segment_header *h,
                             int *open, uint64_t *checkpoint_ns)
{
    if (t->size - off < sizeof *h)
        return 0;
    memcpy(h, t->map + off, sizeof *h);
    if (h->frame_size != sizeof *h - 8)
        return 0;
    *open = 0;
    if (churn_segment_kind_magic(h->magic) == CHURN_SEGMENT_MAGIC)
        return churn_segment_header_crc(h) == h->header_crc;
    churn_open_segment_header o;
    memcpy(&o, t->map + off, sizeof o);
    if (churn_segment_kind_magic(o.magic) != CHURN_SEGMENT_OPEN_MAGIC ||
        churn_open_segment_header_crc(&o) != o.header_crc)
        return 0;
    *open = 1;
    *checkpoint_ns = o.checkpoint_ns;
    h->last_epoch = o.first_epoch;
    return 1;
}

/* A segment is used only when both checksums hold; the payload must be one plain zstd frame.
   next is the offset of the next segment header after off (SIZE_MAX: none): a payload that
   would hold one is damaged (an intact payload never does, since the writer writes the ring
   in order), and is not checksummed, so the payloads checksummed never overlap and the scan
   reads each byte of the file at most once however many headers claim it. */
static int valid_segment_at(const churn_trace *t, size_t off, size_t next,
                            churn_segment_info *out)
{
    churn_segment_header h;
    int open;
    uint64_t checkpoint_ns = 0;
    if (!segment_header_at(t, off, &h, &open, &checkpoint_ns))
        return 0;
    if (h.version != t->info.version || h.raw_bytes > CHURN_SEGMENT_MAX_RAW ||
        (open && t->info.version < 5) ||
        (churn_segment_is_delta(h.magic) && t->info.version < 8) || h.zstd_bytes < 4 ||
        h.zstd_bytes > t->size - off - sizeof h || next < off + sizeof h + h.zstd_bytes)
        return -1;
    const uint8_t *payload = t->map + off + sizeof h;
    uint32_t magic;
    memcpy(&magic, payload, 4);
    if (magic != ZSTD_MAGICNUMBER || churn_crc32(0, payload, h.zstd_bytes) != h.payload_crc)
        return -1;
    *out = (churn_segment_info){off,          h.seq,         h.first_epoch,
                                h.last_epoch, h.raw_bytes,   h.zstd_bytes,
                                open,         checkpoint_ns, churn_segment_is_delta(h.magic)};
    return 1;
}

/* The writer puts a file header at offset 0 only, and a wrapped ring overwrites segments,
   never that header: a valid file header further on is the start of another file, appended
   to this one (cat a b), whose segments would splice two runs into one report. */
static int file_header_at(const churn_trace *t, size_t off, char *err, size_t errlen)
{
    churn_file_header h;
    if (t->size - off < sizeof h)
        return 0;
    memcpy(&h, t->map + off, sizeof h);
    if (h.frame_size != sizeof h - 8 || memcmp(h.magic, CHURN_FILE_MAGIC, 8) != 0 ||
        churn_file_header_crc(&h) != h.header_crc)
        return 0;
    if (h.pid == t->info.pid && h.start_realtime_ns == t->info.start_realtime_ns)
        snprintf(err, errlen, "a second copy of its file header at byte %zu: concatenated "
                 "traces; analyze each trace file on its own", off);
    else
        snprintf(err, errlen, "another trace starts at byte %zu (pid %llu%s; this one is pid "
                 "%llu): concatenated traces; analyze each trace file on its own",
                 off, (unsigned long long)h.pid,
                 h.pid == t->info.pid ? ", another start time" : "",
                 (unsigned long long)t->info.pid);
    return 1;
}

/* Segments may sit anywhere after the header once the ring has wrapped, with the remains of
   overwritten ones in between, so the scan resyncs on the skippable-frame magic: first every
   header whose checksum holds, then each checked in turn.  Returns -1 with err set when the
   file holds another trace. */
static int scan_segments(churn_trace *t, char *err, size_t errlen)
{
    static const uint8_t magic[4] = {0x5C, 0x2A, 0x4D, 0x18};
    size_t *heads = NULL, nheads = 0, heads_cap = 0;
    for (size_t off = CHURN_FILE_HEADER_BYTES; off < t->size; off++) {
        const uint8_t *hit = memmem(t->map + off, t->size - off, magic, sizeof magic);
        if (!hit)
            break;
        off = (size_t)(hit - t->map);
        churn_segment_header h;
        int open;
        uint64_t ns;
        if (segment_header_at(t, off, &h, &open, &ns)) {
            churn_reserve(&heads, &heads_cap, nheads + 1, sizeof *heads);
            heads[nheads++] = off;
        } else if (file_header_at(t, off, err, errlen)) {
            free(heads);
            return -1;
        }
    }
    for (size_t i = 0; i < nheads; i++) {
        churn_segment_info s;
        int v = valid_segment_at(t, heads[i], i + 1 < nheads ? heads[i + 1] : SIZE_MAX, &s);
        if (v > 0) {
            churn_reserve(&t->segs, &t->segs_cap, t->nsegs + 1, sizeof *t->segs);
            t->segs[t->nsegs++] = s;
        } else if (v < 0) {
            t->info.segments_invalid++;
        }
    }
    free(heads);
    return 0;
}

/* By sequence number; of two copies, the closed one first. */
static int by_seq(const void *a, const void *b)
{
    const churn_segment_info *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    if (x->open != y->open)
        return x->open - y->open;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The run starts at its first key segment: the delta segments before it (their key segment
   overwritten by the ring, or lost with a gap) name stacks that no segment read defines. */
static void skip_to_key(churn_trace *t)
{
    size_t key = 0;
    while (key < t->nsegs && t->segs[key].delta)
        key++;
    if (!key)
        return;
    if (key < t->nsegs)
        churn_warn(
            t->warn,
            "%zu segment(s) (seq %llu..%llu, epochs %llu..%llu) not used: delta segments "
            "whose key segment is not in the file; reading starts at key segment %llu",
            key, (unsigned long long)t->segs[0].seq, (unsigned long long)t->segs[key - 1].seq,
            (unsigned long long)t->segs[0].first_epoch,
            (unsigned long long)t->segs[key - 1].last_epoch,
            (unsigned long long)t->segs[key].seq);
    t->info.segments_before_key = key;
    memmove(t->segs, t->segs + key, (t->nsegs - key) * sizeof *t->segs);
    t->nsegs -= key;
}

/* Keeps the contiguous run of sequence numbers that ends at the newest segment: state carried
   across a gap would be wrong, while every segment after it carries its own. */
static void keep_newest_run(churn_trace *t)
{
    qsort(t->segs, t->nsegs, sizeof *t->segs, by_seq);
    size_t n = 0;
    for (size_t i = 0; i < t->nsegs; i++) {
        /* The writer closes a segment where its checkpoints were, over their header, unless
           it outgrew that place: then the open copy is what a kill left before the writer
           could zero it, superseded by the closed one. */
        if (n && t->segs[n - 1].seq == t->segs[i].seq && t->segs[i].open &&
            !t->segs[n - 1].open)
            continue;
        /* Only the segment being filled is written open: an open one before the newest is
           not what the writer leaves. */
        if (t->segs[i].open && i + 1 < t->nsegs) {
            churn_warn(t->warn, "open segment %llu at offset %llu is not the newest (segment "
                       "%llu follows it): damaged, not used",
                       (unsigned long long)t->segs[i].seq,
                       (unsigned long long)t->segs[i].offset,
                       (unsigned long long)t->segs[i + 1].seq);
            t->info.segments_invalid++;
            continue;
        }
        if (n && t->segs[n - 1].seq == t->segs[i].seq) {
            churn_warn(t->warn, "segment %llu appears twice; the copy at offset %llu is ignored",
                       (unsigned long long)t->segs[i].seq,
                       (unsigned long long)t->segs[i].offset);
            continue;
        }
        t->segs[n++] = t->segs[i];
    }
    t->nsegs = n;
    size_t first = n ? n - 1 : 0;
    while (first > 0 && t->segs[first - 1].seq + 1 == t->segs[first].seq)
        first--;
    /* A run of delta segments alone cannot be read (their key segment is lost with the
       gap): the newest run that holds a key segment is read instead, and said so. */
    size_t end = n;
    for (;;) {
        size_t k = first;
        while (k < end && t->segs[k].delta)
            k++;
        if (k < end || first == 0)
            break;
        end = first;
        while (--first > 0 && t->segs[first - 1].seq + 1 == t->segs[first].seq)
            ;
    }
    if (end < n) {
        churn_warn(t->warn,
                   "%zu newer segment(s) (seq %llu..%llu, epochs %llu..%llu) not used: delta "
                   "segments after a gap, whose key segment is lost with it; reading ends at "
                   "segment %llu",
                   n - end, (unsigned long long)t->segs[end].seq,
                   (unsigned long long)t->segs[n - 1].seq,
                   (unsigned long long)t->segs[end].first_epoch,
                   (unsigned long long)t->segs[n - 1].last_epoch,
                   (unsigned long long)t->segs[end - 1].seq);
        n = t->nsegs = end;
    }
    if (first > 0) {
        churn_warn(t->warn,
                   "%zu older segment(s) (seq %llu..%llu) not used: segment(s) before seq %llu "
                   "are missing",
                   first, (unsigned long long)t->segs[0].seq,
                   (unsigned long long)t->segs[first - 1].seq,
                   (unsigned long long)t->segs[first].seq);
        memmove(t->segs, t->segs + first, (n - first) * sizeof *t->segs);
        t->nsegs = n - first;
        t->info.segments_gapped = first;
    }
    skip_to_key(t);
    if (t->nsegs && t->segs[t->nsegs - 1].open) {
        t->info.ends_open = 1;
        t->info.checkpoint_ns = t->segs[t->nsegs - 1].checkpoint_ns;
    }
}

static int map_file(churn_trace *t, const char *path, char *err, size_t errlen)
{
    int fd = churn_open_regular(path);
    if (fd < 0) {
        set_err(err, errlen, errno == EINVAL ? "not a regular file" : strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        set_err(err, errlen, strerror(errno));
        close(fd);
        return -1;
    }
    if (st.st_size == 0) {
        set_err(err, errlen, "empty file");
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        set_err(err, errlen, strerror(errno));
        return -1;
    }
    madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
    t->map = m;
    t->size = (size_t)st.st_size;
    t->info.file_bytes = t->size;
    return 0;
}

churn_trace *churn_trace_open(const char *path, churn_warnings *w, char *err, size_t errlen)
{
    churn_trace *t = churn_xcalloc(1, sizeof *t);
    t->warn = w;
    if (map_file(t, path, err, errlen) != 0 || check_file_header(t, err, errlen) != 0) {
        churn_trace_close(t);
        return NULL;
    }
    read_producer(t);
    if (scan_segments(t, err, errlen) != 0) {
        churn_trace_close(t);
        return NULL;
    }
    if (t->nsegs == 0) {
        /* A header alone is what a process leaves that ended (kill -9) or is still running
           before its first segment was written: say so, the user can do something. */
        if (t->info.segments_invalid)
            snprintf(err, errlen, "no valid segment (%zu damaged)", t->info.segments_invalid);
        else
            snprintf(err, errlen, "no valid segment: the traced process has not written one "
                     "(killed, ended by an exit_group system call made inline, or still "
                     "running, before its first; CHURN_FLUSH_MS)");
        churn_trace_close(t);
        return NULL;
    }
    if (t->info.segments_invalid)
        churn_warn(w, "%zu damaged segment(s) skipped (checksum or size check failed)",
                   t->info.segments_invalid);
    keep_newest_run(t);
    if (t->nsegs == 0) {
        snprintf(err, errlen,
                 "no key segment: the %zu segment(s) after the last gap are delta "
                 "segments, whose key segment is not in the file",
                 t->info.segments_before_key);
        churn_trace_close(t);
        return NULL;
    }
    t->dctx = ZSTD_createDCtx();
    if (!t->dctx) {
        set_err(err, errlen, "cannot create a zstd decompression context");
        churn_trace_close(t);
        return NULL;
    }
    return t;
}

void churn_trace_close(churn_trace *t)
{
    if (!t)
        return;
    if (t->map)
        munmap((void *)t->map, t->size);
    ZSTD_freeDCtx(t->dctx);
    free(t->segs);
    free(t);
}

const churn_trace_info *churn_trace_info_of(const churn_trace *t)
{
    return &t->info;
}

size_t churn_trace_segments(const churn_trace *t)
{
    return t->nsegs;
}

const churn_segment_info *churn_trace_segment(const churn_trace *t, size_t i)
{
    return &t->segs[i];
}

#define BLOCK_HEADER_BYTES 3 /* a zstd block's header */

int churn_inflate_exact(ZSTD_DCtx *d, const uint8_t *in, size_t n, uint8_t *out, size_t want,
                        int frame_end, char *why, size_t whylen)
{
    ZSTD_inBuffer ib = {in, n, 0};
    ZSTD_outBuffer ob = {out, want, 0};
    size_t r = 1;
    while (ib.pos < ib.size) {
        size_t before_in = ib.pos, before_out = ob.pos;
        r = ZSTD_decompressStream(d, &ob, &ib);
        if (ZSTD_isError(r) || r == 0 || (ib.pos == before_in && ob.pos == before_out))
            break;
    }
    /* Decoded bytes the full output could not take are more than the header counts. */
    uint8_t extra;
    ZSTD_outBuffer past = {&extra, 1, 0};
    if (!ZSTD_isError(r) && r != 0 && ob.pos == ob.size)
        ZSTD_decompressStream(d, &past, &ib);
    /* Between blocks the decoder asks for the next block's header, and for more inside one. */
    int ok = !ZSTD_isError(r) && ib.pos == ib.size && !past.pos && ob.pos == want &&
             (frame_end ? r == 0 : r == BLOCK_HEADER_BYTES);
    if (!ok) {
        snprintf(why, whylen, "%s",
                 ZSTD_isError(r)                 ? ZSTD_getErrorName(r)
                 : ib.pos != ib.size || past.pos ? "more in its frame than its header counts"
                 : frame_end && r != 0           ? "its frame does not end"
                 : !frame_end && r == 0          ? "its frame ends, as no checkpoint leaves it"
                 : ob.pos != want                ? "its blocks hold less than its header counts"
                                                 : "its last block is cut short");
        return -1;
    }
    memset(out + want, 0, CHURN_RECORDS_PADDING);
    return 0;
}

/* An open segment's frame so far: a frame header and complete blocks, not ended, which
   must give exactly raw_bytes with every byte of it taken.  A frame that ends in it, a block
   cut short, or more (or less) output than the header counts is damage, never read as
   all of the segment. */
static int decompress_open(churn_trace *t, const churn_segment_info *s, const uint8_t *payload,
                           uint8_t **buf, size_t *cap, size_t *len, char *why, size_t whylen)
{
    churn_reserve(buf, cap, (size_t)s->raw_bytes + CHURN_RECORDS_PADDING, 1);
    char damage[96];
    ZSTD_DCtx_reset(t->dctx, ZSTD_reset_session_only);
    int rc = churn_inflate_exact(t->dctx, payload, s->zstd_bytes, *buf, s->raw_bytes, 0, damage,
                                 sizeof damage);
    ZSTD_DCtx_reset(t->dctx, ZSTD_reset_session_only);
    if (rc) {
        t->info.ends_open = 0; /* the trace does not hold what its checkpoint says */
        snprintf(why, whylen, "open segment damaged (%s)", damage);
        return -1;
    }
    *len = s->raw_bytes;
    return 0;
}

int churn_trace_decompress(churn_trace *t, size_t i, uint8_t **buf, size_t *cap, size_t *len,
                           char *why, size_t whylen)
{
    const churn_segment_info *s = &t->segs[i];
    const uint8_t *payload = t->map + s->offset + sizeof(churn_segment_header);
    if (s->open)
        return decompress_open(t, s, payload, buf, cap, len, why, whylen);
    if (ZSTD_findFrameCompressedSize(payload, s->zstd_bytes) != s->zstd_bytes) {
        snprintf(why, whylen, "payload is not exactly one zstd frame");
        return -1;
    }
    /* raw_bytes was capped at CHURN_SEGMENT_MAX_RAW by the scan, and the output buffer is
       exactly that large, so a lying frame cannot make the decompressor write more. */
    churn_reserve(buf, cap, (size_t)s->raw_bytes + CHURN_RECORDS_PADDING, 1);
    size_t got = ZSTD_decompressDCtx(t->dctx, *buf, s->raw_bytes, payload, s->zstd_bytes);
    if (ZSTD_isError(got) || got != s->raw_bytes) {
        snprintf(why, whylen, "decompression failed (%s)",
                 ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size differs from header");
        return -1;
    }
    memset(*buf + got, 0, CHURN_RECORDS_PADDING);
    *len = got;
    /* A pass reads each payload once: its whole pages leave the process's RSS (the mapping is
       the file's, read-only, so a later pass reads them again from the page cache). */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)payload + page - 1) & ~(page - 1);
    uintptr_t to = ((uintptr_t)payload + s->zstd_bytes) & ~(page - 1);
    if (to > from)
        madvise((void *)from, to - from, MADV_DONTNEED);
    return 0;
}

size_t churn_trace_peek(churn_trace *t, size_t i, uint8_t *buf, size_t cap)
{
    const churn_segment_info *s = &t->segs[i];
    if (cap <= CHURN_RECORDS_PADDING)
        return 0;
    ZSTD_inBuffer in = {t->map + s->offset + sizeof(churn_segment_header), s->zstd_bytes, 0};
    ZSTD_outBuffer out = {buf, cap - CHURN_RECORDS_PADDING, 0};
    ZSTD_DCtx_reset(t->dctx, ZSTD_reset_session_only);
    while (out.pos < out.size) {
        size_t before_in = in.pos, before_out = out.pos;
        size_t r = ZSTD_decompressStream(t->dctx, &out, &in);
        if (ZSTD_isError(r) || r == 0 || (in.pos == before_in && out.pos == before_out))
            break;
    }
    ZSTD_DCtx_reset(t->dctx, ZSTD_reset_session_only);
    memset(buf + out.pos, 0, CHURN_RECORDS_PADDING);
    return out.pos;
}

int churn_trace_decode(const churn_trace *t, size_t i, const uint8_t *raw, size_t len,
                       churn_decoder *d, churn_record_fn fn, void *ctx, churn_live_sink *live,
                       churn_warnings *w)
{
    size_t bad_off;
    unsigned bad_tag;
    d->version = t->info.version;
    if (churn_decode_records(d, raw, len, fn, ctx, live, &bad_off, &bad_tag) == 0)
        return 0;
    churn_warn(w,
               "segment %llu: malformed record (tag 0x%02x) at byte %zu of %zu; rest of the "
               "segment ignored",
               (unsigned long long)t->segs[i].seq, bad_tag, bad_off, len);
    return -1;
}
