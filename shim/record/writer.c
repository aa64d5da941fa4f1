/*
 * The writer thread: everything that costs more than a few stores happens here, off the
 * allocation path.  Each pass drains every thread's ring in epoch order, keeps the per-epoch
 * histograms (size classes and callsites) and per-callsite live figures, has them and the
 * events written as compact records (encode.c), and closes segments (zstd) into the ring file.
 *
 * An epoch is closed once its tick is published and every ring's events tagged with it have
 * been drained; an event that arrives later than that (its thread was preempted between
 * reading the epoch and publishing the event) is counted in the open epoch as "late" while
 * its record keeps its own epoch tag.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
/* ZSTD_createCCtx_advanced (custom allocator) is in the experimental section of the API. */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include "record/encode.h"
#include "record/segstate.h"
#include "shim.h"

#define POLL_NS 50000000u          /* an idle writer looks for work 20 times a second */
/* A writer whose last pass drained this many events looks again after BUSY_POLL_NS, on its
   own timer, so a busy program's rings rarely fill to the point where its threads must wake
   the writer (workerd: ~270 wakes a second, each tens of microseconds on the program's
   thread in this VM); once the program is quiet it is back to POLL_NS. */
#define BUSY_EVENTS 512u
#define BUSY_POLL_NS 1000000u
#define COUNTER_MIN_NS 1000000u    /* allocator counters are sampled at most every 1 ms */
/* The open segment goes into the file at a pass at least this long after its last checkpoint
   (docs/design.md, "Endings"): what a kill -9 or an exit libchurn cannot see loses. */
#define CHECKPOINT_NS 10000000u
#define FINISH_WAIT_NS 2000000000u /* how long the final flush waits for a busy writer */
#define ALONE_CHECK_NS 100000000u  /* an idle writer looks whether it is the last thread */
#define MAX_RINGS_PER_PASS 65536
#define WRITER_STACK (8u << 20)   /* glibc's default */
#define ROOM_BATCH 4096u           /* slots drained between tail stores within a batch: a
                                      waiting producer resumes at a quarter free (thread.c) */

static struct {
    pthread_t thread;
    int running;
    _Atomic int stop;
    /* An exec is under way (exec.c): the writer writes nothing until it comes back failed, so
       that the exec's EXIT ends the trace of an image that the exec replaced. */
    _Atomic int exec_pending;
    _Atomic uint32_t lock;
    pid_t owner_tid;

    ZSTD_CCtx *zstd;
    churn_buf packed;          /* room for the segment header, then the zstd frame so far */
    size_t fed;               /* raw bytes of the open segment already given to zstd */
    int seg_failed;           /* zstd or libchurn's memory failed: the segment is dropped */
    int compress_due;         /* records wait for compression: the next pass comes at once */
    size_t target;            /* close the segment at this raw size */
    uint64_t seg_first_epoch, seg_open_ns, seg_events;
    int seg_open;
    /* Every segment since the last key segment was written: the next may be a delta one
       (encode.h), until KEY_EVERY_PART of the ring has been written since that key. */
    int chain_whole;
    uint64_t since_key;       /* file bytes of the segments written since the key segment */
    uint64_t ckpt_ns;         /* the open segment's last checkpoint, 0 before its first */
    size_t ckpt_raw;          /* raw bytes it held */
    int ckpt_off;             /* the segment takes no more checkpoints (outfile.c said why) */
    uint64_t short_noted;     /* cut stacks the open segment's stream counted last (0: none
                                 yet, SHORT_STACKS being a running total) */
    /* Set once exit or exec has ended the last epoch: a segment closed after that (a flush
       of the same pass) ends with it, not with the empty one opened after it. */
    int last_ended;
    uint64_t last_epoch;
    /* The passes of exit, fatal signals and exec: they run on a thread that may have been
       interrupted inside the allocator, holding its locks, so they never ask it (counters
       are read outside the writer lock, size classes not at all) ... */
    int final_path;
    /* ... nor, after a fatal signal (the thread may be inside the loader), the loader: the
       module map is the one of start-up, the last pass and the last dlclose. */
    int no_loader;
    /* Dropped events not yet in a written segment, by reason: ring-full ones are counted in
       churn_dropped_events (above dropped_reported), the others here.  A segment names them
       in DROPPED records, and only once it is written are they taken off (noted_*): a count
       in a segment that is lost with it is still owed. */
    uint64_t dropped_reported, write_dropped, too_big_dropped;
    uint64_t noted_ring, noted_write, noted_too_big;
    /* Those a checkpoint named in the open segment and took off: owed again if it is lost. */
    uint64_t seg_noted_ring, seg_noted_write, seg_noted_too_big;

    uint64_t open_epoch;      /* the epoch whose histograms are being filled */
    uint64_t first_epoch;     /* the trace's first: an event tagged before it is another's
                                 (a copy attached again, attach.c) */
    /* An event is counted in its size class alone: the epoch's totals and the live figures
       follow from the classes, summed where they are needed (epoch_sums). */
    churn_counts classes[CHURN_SIZE_CLASSES];
    churn_counts epoch_totals;               /* filled at the epoch's close */
    uint8_t class_dirty[CHURN_SIZE_CLASSES]; /* likewise */
    uint64_t late;
    uint64_t live_count, live_bytes; /* at the open epoch's start */
    churn_site *sites;
    size_t nsites;    /* one past the highest stack id met: the ids a carry walks */
    size_t sites_cap; /* the room sites has */
    uint32_t *dirty;
    size_t ndirty, dirty_cap;
    uint64_t last_end_ns, last_cpu_ns;
    uint64_t counters[CHURN_MAX_COUNTERS], counters_ns;
    uint64_t counters_epoch; /* churn_epoch_now when they were read: the reading at the end
                                of the epoch before it, of no other (close_epoch) */
    int busy;                 /* the last pass drained BUSY_EVENTS or more */
    _Atomic uint32_t started; /* the thread runs writer_main (start_thread waits for it) */
} w;

/* ---- the writer lock: held for a pass, for the final flush and across fork ---- */

static int lock_writer(uint64_t timeout_ns)
{
    uint64_t deadline = timeout_ns ? churn_now_ns() + timeout_ns : 0;
    while (atomic_exchange_explicit(&w.lock, 1, memory_order_acquire)) {
        if (deadline && churn_now_ns() > deadline)
            return -1;
        sched_yield();
    }
    w.owner_tid = churn_gettid();
    return 0;
}

static void unlock_writer(void)
{
    w.owner_tid = 0;
    atomic_store_explicit(&w.lock, 0, memory_order_release);
}

int churn_writer_running(void)
{
    return w.running;
}

/* ---- waking the writer ---- */

/* The writer sleeps on `wake` until it is set or its poll interval passes.  A producer sets it
   and makes the system call only when the writer said it sleeps: a futex wake costs the
   program's thread tens of microseconds in this VM (the IPI to the writer's core exits to the
   hypervisor).  (Under workerd the writer was asleep at nearly every wake; what took the
   main thread's 548 futex calls in 2 s down to 63 is BUSY_POLL_NS.)  Both sides store then
   load, sequentially consistent, so one of them sees the other: either the producer sees
   `sleeping` and wakes it, or the writer's futex wait sees `wake` set and does not sleep. */
static _Atomic uint32_t wake, sleeping;

void churn_writer_poke(void)
{
    atomic_store(&wake, 1);
    if (atomic_load(&sleeping))
        churn_futex_wake(&wake);
}

static void sleep_until_poked(uint64_t timeout_ns)
{
    atomic_store(&sleeping, 1);
    churn_futex_wait(&wake, 0, timeout_ns);
    atomic_store(&sleeping, 0);
}

int churn_writer_is_self(void)
{
    return w.running && pthread_equal(pthread_self(), w.thread);
}

/* ---- the callsite table ---- */

/* Called for every event: the test inline, the rest (once per new stack, the growth once per
   doubling) out of line.  The ids past the highest met are never read: a key segment's carry
   walks the ids in use, and a fresh block's untouched pages fault even to be read: all of
   the first block is 56 page faults, about 0.6 ms here, in every short program. */
static __attribute__((noinline)) void site_grow(uint32_t id)
{
    if (id >= w.sites_cap) {
        size_t n = w.sites_cap ? w.sites_cap : 4096;
        while (n <= id)
            n *= 2;
        churn_site *s = churn_mem_realloc(w.sites, n * sizeof *s); /* its new sites zeroed */
        if (!s)
            return;
        w.sites = s;
        w.sites_cap = n;
    }
    w.nsites = (size_t)id + 1;
}

static inline void site_reserve(uint32_t id)
{
    if (CHURN_UNLIKELY(id >= w.nsites))
        site_grow(id);
}

/* The open epoch's totals, from its size classes. */
static void epoch_sums(churn_counts *t)
{
    *t = (churn_counts){0};
    for (unsigned c = 0; c < CHURN_SIZE_CLASSES; c++) {
        t->allocs += w.classes[c].allocs;
        t->frees += w.classes[c].frees;
        t->alloc_bytes += w.classes[c].alloc_bytes;
        t->free_bytes += w.classes[c].free_bytes;
    }
}

/* What is live now: at the open epoch's start, and what the epoch did since. */
static void live_now(uint64_t *count, uint64_t *bytes)
{
    churn_counts t;
    epoch_sums(&t);
    *count = w.live_count + t.allocs - t.frees;
    *bytes = w.live_bytes + t.alloc_bytes - t.free_bytes;
}

/* Raw bytes of the open segment so far. */
static size_t segment_raw(void)
{
    return w.fed + churn_enc.raw.len;
}

/* Compression goes along with the records, a piece at a time between drains, instead of all
   at the segment's close: compressing a whole 4 MiB segment (or even one 128 KiB zstd block)
   took long enough for a producer on the other core to fill its ring and wait.  A piece is
   flushed as its own zstd block, so the work cannot pile up inside zstd either. */
#define COMPRESS_PIECE (64u << 10)

static void compress(size_t bytes, ZSTD_EndDirective mode)
{
    ZSTD_inBuffer in = {churn_enc.raw.buf, bytes, 0};
    size_t hdr = sizeof(churn_segment_header);
    for (;;) {
        /* The frame so far outgrows the bound of all the input so far only by the headers of
           the blocks that checkpoints ended early: room for those too. */
        size_t need = hdr + ZSTD_compressBound(segment_raw());
        if (need < hdr + w.packed.len + (4u << 10))
            need = hdr + w.packed.len + (64u << 10);
        if (w.seg_failed || (need > w.packed.cap && churn_buf_reserve(&w.packed, need - w.packed.len))) {
            w.seg_failed = 1;
            break;
        }
        ZSTD_outBuffer out = {w.packed.buf + hdr, w.packed.cap - hdr, w.packed.len};
        size_t left = ZSTD_compressStream2(w.zstd, &out, &in, mode);
        w.packed.len = out.pos;
        if (ZSTD_isError(left)) {
            w.seg_failed = 1;
            break;
        }
        /* Everything taken; at a checkpoint or the end also everything written out. */
        if (in.pos == in.size && (mode == ZSTD_e_continue || left == 0))
            break;
    }
    memmove(churn_enc.raw.buf, churn_enc.raw.buf + bytes, churn_enc.raw.len - bytes);
    churn_enc.raw.len -= bytes;
    w.fed += bytes;
}

/* One piece of the records not yet compressed; returns 1 if more are waiting. */
static int compress_piece(void)
{
    size_t bytes = churn_enc.raw.len < COMPRESS_PIECE ? churn_enc.raw.len : COMPRESS_PIECE;
    if (bytes)
        compress(bytes, ZSTD_e_continue);
    return churn_enc.raw.len != 0;
}

/* The largest raw segment whose compressed frame, at its worst (ZSTD_compressBound), takes
   no more than a quarter of ring bytes: the ring then holds four segments at the least. */
static size_t segment_raw_fitting(uint64_t ring)
{
    uint64_t room = ring / 4, hdr = sizeof(churn_segment_header);
    if (room <= hdr + (16u << 10))
        return 16u << 10; /* a ring this small holds next to nothing: such segments fail */
    size_t raw = (size_t)(room - hdr);
    while (raw > (16u << 10) && hdr + ZSTD_compressBound(raw) > room)
        raw -= raw / 256 + 256;
    return raw;
}

/* A key segment again after this share of the ring: a reader of a wrapped ring starts at
   the oldest key segment left in it, so at most this much of what the ring holds (plus the
   segment that crossed the mark) goes unread, while a python process writing every stack
   spends a tenth of its trace on the definitions of a key segment (docs/benchmarks.md). */
#define KEY_EVERY_PART 16u

static int next_is_key(void)
{
    return !w.chain_whole || w.since_key >= churn_outfile_ring_room() / KEY_EVERY_PART;
}

static void segment_open(void)
{
    int key = next_is_key();
    churn_enc_segment_begin(key);
    w.packed.len = 0;
    w.fed = 0;
    w.seg_failed = 0;
    ZSTD_CCtx_reset(w.zstd, ZSTD_reset_session_only);
    uint64_t now = churn_now_ns();
    if (!churn_emit_segment_start(churn_outfile_next_seq(), w.open_epoch, now))
        return;
    if (key) {
        w.chain_whole = 1;
        w.since_key = 0;
    }
    w.seg_open_ns = now;
    churn_emit_allocator();
    if (churn_opt.stack_sample > 1)
        churn_emit_stack_sample(churn_opt.stack_sample);
    if (churn_opt.sample_bytes)
        churn_emit_sample_bytes(churn_opt.sample_bytes);
    churn_emit_size_classes(w.final_path);
    churn_emit_modules();
    uint64_t live_count, live_bytes;
    live_now(&live_count, &live_bytes);
    churn_emit_carry(w.sites, w.nsites, live_count, live_bytes);
    /* A segment's fixed preamble grows with the stack table; keep it a small share. */
    size_t preamble = segment_raw();
    w.target = churn_opt.segment_bytes > preamble * 4 ? churn_opt.segment_bytes : preamble * 4;
    if (w.target > CHURN_SEGMENT_MAX_RAW / 2)
        w.target = CHURN_SEGMENT_MAX_RAW / 2;
    /* The ring (cut by a full disk, perhaps) must hold a few segments whatever the preamble. */
    size_t fits = segment_raw_fitting(churn_outfile_ring_room());
    if (w.target > fits)
        w.target = fits;
    w.seg_first_epoch = w.open_epoch;
    w.seg_events = 0;
    w.ckpt_ns = 0;
    w.ckpt_raw = 0;
    w.ckpt_off = 0;
    w.short_noted = 0;
    w.seg_noted_ring = w.seg_noted_write = w.seg_noted_too_big = 0;
    churn_seg_reset();
    w.seg_open = 1;
}

static void emit_dropped(void)
{
    w.noted_ring = churn_emit_drop(atomic_load(&churn_dropped_events) - w.dropped_reported,
                             CHURN_DROP_RING_FULL);
    w.noted_write = churn_emit_drop(w.write_dropped, CHURN_DROP_WRITE_ERROR);
    w.noted_too_big = churn_emit_drop(w.too_big_dropped, CHURN_DROP_SEGMENT_TOO_BIG);
    w.short_noted = churn_unwind_short_stacks();
    churn_emit_short_stacks(w.short_noted);
}

/* Drops that no written segment has named yet. */
static int drops_owed(void)
{
    return w.write_dropped || w.too_big_dropped ||
           atomic_load(&churn_dropped_events) != w.dropped_reported;
}

static void segment_close(void)
{
    if (!w.seg_open)
        return;
    emit_dropped();
    compress(churn_enc.raw.len, ZSTD_e_end);
    uint64_t last = w.last_ended && w.open_epoch > w.last_epoch ? w.last_epoch : w.open_epoch;
    int rc = w.seg_failed ? CHURN_OUTFILE_FAILED
                          : churn_outfile_write_segment(
                                w.packed.buf + sizeof(churn_segment_header), w.packed.len,
                                (uint32_t)w.fed, w.seg_first_epoch, last);
    if (rc == 0)
        w.since_key += sizeof(churn_segment_header) + w.packed.len;
    else
        w.chain_whole = 0; /* what it defined is not in the file: the next is a key one */
    if (rc == 0) {
        w.dropped_reported += w.noted_ring;
        w.write_dropped -= w.noted_write;
        w.too_big_dropped -= w.noted_too_big;
    } else {
        w.dropped_reported -= w.seg_noted_ring;
        w.write_dropped += w.seg_noted_write;
        w.too_big_dropped += w.seg_noted_too_big;
        if (rc == CHURN_OUTFILE_TOO_BIG)
            w.too_big_dropped += w.seg_events;
        else
            w.write_dropped += w.seg_events;
    }
    w.noted_ring = w.noted_write = w.noted_too_big = 0;
    w.seg_open = 0;
}

/* The open segment into the file as far as its records go (outfile.c), ended as complete
   zstd blocks.  Drops not yet named go into it first, so a trace that ends at a checkpoint
   still says what it lacks; they are taken off now and owed again if the segment is lost. */
static void checkpoint(uint64_t now)
{
    if (!w.seg_open || w.seg_failed || w.ckpt_off)
        return;
    if (drops_owed() || churn_unwind_short_stacks() != w.short_noted) {
        emit_dropped();
        w.dropped_reported += w.noted_ring;
        w.write_dropped -= w.noted_write;
        w.too_big_dropped -= w.noted_too_big;
        w.seg_noted_ring += w.noted_ring;
        w.seg_noted_write += w.noted_write;
        w.seg_noted_too_big += w.noted_too_big;
        w.noted_ring = w.noted_write = w.noted_too_big = 0;
    }
    if (segment_raw() == w.ckpt_raw)
        return;
    compress(churn_enc.raw.len, ZSTD_e_flush);
    if (w.seg_failed)
        return;
    size_t hdr = sizeof(churn_segment_header);
    if (churn_outfile_checkpoint(w.packed.buf + hdr, w.packed.len, (uint32_t)w.fed,
                                 w.seg_first_epoch, now, hdr + ZSTD_compressBound(w.target)))
        w.ckpt_off = 1;
    w.ckpt_ns = now;
    w.ckpt_raw = w.fed;
}

/* Starts a new segment when the current one is full; called between records only. */
static void segment_check(void)
{
    if (w.seg_open && segment_raw() >= w.target) {
        segment_close();
        segment_open();
    } else if (!w.seg_open) {
        segment_open();
    }
}

/* ---- histograms and events ---- */

#define MIN_DIRTY 4096u

/* Once a callsite an epoch: out of line, so that the test alone is on every event's path. */
static __attribute__((noinline)) void add_dirty(churn_site *s, uint32_t id)
{
    if (w.ndirty == w.dirty_cap) {
        size_t cap = w.dirty_cap ? w.dirty_cap * 2 : MIN_DIRTY;
        uint32_t *d = churn_mem_realloc(w.dirty, cap * sizeof *d);
        if (!d)
            return;
        w.dirty = d;
        w.dirty_cap = cap;
    }
    s->dirty = 1;
    w.dirty[w.ndirty++] = id;
}

static inline void mark_dirty(churn_site *s, uint32_t id)
{
    if (!s->dirty)
        add_dirty(s, id);
}

/* s is the event's site, NULL when libchurn's memory had no room for it. */
static inline void count_alloc(const churn_event *ev, churn_site *s)
{
    unsigned cls = churn_size_class(ev->size);
    w.classes[cls].allocs++;
    w.classes[cls].alloc_bytes += ev->size;
    if (s) {
        s->epoch.allocs++;
        s->epoch.alloc_bytes += ev->size;
        s->live_count++;
        s->live_bytes += ev->size;
        mark_dirty(s, ev->stack);
    }
}

static inline void count_free(const churn_event *ev, churn_site *s)
{
    unsigned cls = churn_size_class(ev->size);
    w.classes[cls].frees++;
    w.classes[cls].free_bytes += ev->size;
    if (s) {
        s->epoch.frees++;
        s->epoch.free_bytes += ev->size;
        s->live_count--;
        s->live_bytes -= ev->size;
        mark_dirty(s, ev->stack);
    }
}

/* The ring stores the low 32 bits of the epoch; the writer knows the high ones. */
static uint64_t widen_epoch(uint32_t e, uint64_t now)
{
    uint64_t v = (now & ~(uint64_t)0xffffffffu) | e;
    return v > now && v >= (1ull << 32) ? v - (1ull << 32) : v;
}

/* The live map is the writer's, and events reach it in their address's order (the merge
   below): a free finds the allocation it frees there, or is one of an object the trace never
   saw allocated. */
static inline churn_live *live_alloc(const churn_event *ev, unsigned shard)
{
    uint64_t slack = ev->usable >= ev->size ? ev->usable - ev->size : CHURN_SLACK_UNKNOWN;
    return churn_livemap_insert(shard, ev->addr, ev->size, slack, ev->stack, ev->epoch);
}

/* Returns 0 when the free is of an object the live map does not hold: it is made a
   FREE_UNKNOWN.  Else *live is the entry it took. */
static inline int live_free(churn_event *ev, unsigned shard, churn_live *live)
{
    if (!churn_livemap_remove(shard, ev->addr, live)) {
        ev->type = CHURN_EV_FREE_UNKNOWN;
        ev->usable = 0;
        return 0;
    }
    ev->size = live->size;
    ev->stack = live->stack;
    ev->aux = (uint32_t)(ev->epoch - live->epoch);
    /* The allocator's word at the free (a hook's), else the allocation's; a usable size
       below the request (unknown) is written as no slack, as the encoder does. */
    if (!ev->usable)
        ev->usable = live->slack == CHURN_SLACK_UNKNOWN ? live->size : live->size + live->slack;
    return 1;
}

/* Set while a fork's child catches its live map up with the parent's rings: the events are
   the parent's to write. */
static int live_only;

/* An event past the live map: its site (NULL when libchurn's memory had no room for it),
   after the segment is checked: a new segment's carry must not already include the event
   that follows it. */
static inline churn_site *event_site(uint32_t stack, int write)
{
    if (write)
        segment_check();
    site_reserve(stack);
    return stack < w.nsites ? &w.sites[stack] : NULL;
}

/* Whether the event's records may be written: its stack defined in the segment. */
static inline int write_ready(churn_site *s, uint32_t stack)
{
    if (!s) {
        w.write_dropped++; /* no room to define its stack: libchurn's memory ran out */
        return 0;
    }
    if (stack && churn_enc_stack_due(s))
        churn_define_stack(w.sites, stack);
    return 1;
}

static inline void written(int ok)
{
    if (ok)
        w.seg_events++;
    else
        w.write_dropped++;
}

/* An allocation and a free have their own paths, inlined into the drain: the type is known
   there, and none of its tests is taken again.  write is churn_opt.events, read once a
   drain. */
static inline __attribute__((always_inline)) void
record_alloc(const churn_event *ev, pid_t tid, uint64_t epoch, churn_live *note, int write)
{
    churn_site *s = event_site(ev->stack, write);
    if (epoch < w.open_epoch)
        w.late++;
    count_alloc(ev, s);
    if (write && write_ready(s, ev->stack))
        written(churn_encode_alloc(ev, tid, epoch, note));
}

static inline __attribute__((always_inline)) void
record_free(const churn_event *ev, pid_t tid, uint64_t epoch, const churn_live *live, int write)
{
    churn_site *s = event_site(ev->stack, write);
    if (epoch < w.open_epoch)
        w.late++;
    count_free(ev, s);
    if (write && write_ready(s, ev->stack))
        written(churn_encode_free(ev, tid, epoch, live));
}

/* The other types (a free of an object the live map does not hold among them), out of line;
   a SKIP only took its number in the order. */
static __attribute__((noinline)) void record_other(const churn_event *ev, pid_t tid,
                                                   uint64_t epoch)
{
    if (ev->type == CHURN_EV_SKIP || live_only)
        return;
    churn_site *s = event_site(ev->stack, churn_opt.events);
    if (churn_opt.events && write_ready(s, ev->stack))
        written(churn_encode_other(ev, tid, epoch));
}

/* ---- closing epochs ---- */

/* The allocator's counters, read by the writer at most once a millisecond before a pass and
   outside the writer lock: reading them may wait for the allocator's locks, and a thread that
   holds one may be the one finishing the trace (exit.c), which needs the writer lock.  Read
   when an epoch waits to be closed (mallinfo2 walks every free chunk under the arena lock);
   an allocator whose counters are read at the tick (tcmalloc's) keeps its slower ones from
   here, every millisecond (way_tcmalloc.c).  open_epoch is the writer's own: read without the
   lock, it is at worst a pass behind. */
static int read_counters(uint64_t now, uint64_t *values, uint64_t *epoch)
{
    const churn_allocator_info *a = churn_allocator();
    *epoch = atomic_load(&churn_epoch_now);
    if (!a->ncounters || now - w.counters_ns < COUNTER_MIN_NS ||
        (!a->counters_at_tick && *epoch <= w.open_epoch))
        return 0;
    churn_allocator_counters(values);
    /* An epoch that ended while the books were read (mallinfo2 may wait for the arena lock
       the program's thread holds) leaves a reading that is neither epoch's: none is given it,
       and the next pass reads again. */
    return atomic_load(&churn_epoch_now) == *epoch;
}

static void close_epoch(const churn_tick *t, int tick_lost)
{
    uint64_t end_ns = tick_lost ? 0 : t->end_ns, cpu = tick_lost ? 0 : t->cpu_ns;
    uint64_t rss = tick_lost ? 0 : t->rss;
    uint64_t start = w.last_end_ns;
    int stale = 0;
    if (!tick_lost && t->counters_read)
        memcpy(w.counters, t->counters, sizeof w.counters);
    else
        /* A reading is this epoch's only when it was taken after it ended and before the
           next one did.  Read before it ended: by the exit path, or one an earlier epoch was
           closed with, when epochs end faster than the counters are read (COUNTER_MIN_NS);
           read after a later epoch ended: that epoch's heap (age 0, docs/format.md). */
        stale = !tick_lost && churn_allocator()->ncounters &&
                (w.counters_epoch <= w.open_epoch || w.counters_epoch > w.open_epoch + 1);
    churn_allocator_extra_counters(w.counters);
    segment_check();
    churn_emit_size_classes(w.final_path);
    if (stale) {
        uint64_t read_at = w.counters_ns ? w.counters_ns : churn_start_ns; /* never: zeros */
        uint64_t age = end_ns > read_at ? end_ns - read_at : 1; /* before: at least 1 */
        churn_emit_counters_stale(w.open_epoch, w.counters_epoch <= w.open_epoch ? age : 0);
    }
    /* Sampled: the events are a sample, the counts of every allocation and free are the
       threads' (format.h, CHURN_REC_SAMPLE_BYTES). */
    live_now(&w.live_count, &w.live_bytes);
    epoch_sums(&w.epoch_totals);
    for (unsigned c = 0; c < CHURN_SIZE_CLASSES; c++)
        w.class_dirty[c] = (w.classes[c].allocs | w.classes[c].frees) != 0;
    if (churn_opt.sample_bytes)
        churn_sample_collect(w.open_epoch, &w.epoch_totals.allocs, &w.epoch_totals.alloc_bytes,
                             &w.epoch_totals.frees);
    churn_emit_epoch_end(&(churn_epoch_end){
        .epoch = w.open_epoch,
        .start_ns = start,
        .duration_ns = end_ns > start ? end_ns - start : 0,
        .cpu_ns = cpu > w.last_cpu_ns ? cpu - w.last_cpu_ns : 0,
        .rss = rss,
        .totals = &w.epoch_totals,
        .late = w.late,
        .live_count = w.live_count,
        .live_bytes = w.live_bytes,
        .classes = w.classes,
        .class_dirty = w.class_dirty,
        .dirty = w.dirty,
        .ndirty = w.ndirty,
        .sites = w.sites,
        .nsites = w.nsites,
        .counters = w.counters,
        .ncounters = churn_allocator()->ncounters,
    });
    for (size_t i = 0; i < w.ndirty; i++) {
        churn_site *s = &w.sites[w.dirty[i]];
        memset(&s->epoch, 0, sizeof s->epoch);
        s->dirty = 0;
    }
    w.ndirty = 0;
    memset(w.classes, 0, sizeof w.classes);
    memset(w.class_dirty, 0, sizeof w.class_dirty);
    memset(&w.epoch_totals, 0, sizeof w.epoch_totals);
    w.late = 0;
    if (!tick_lost) {
        w.last_end_ns = end_ns;
        w.last_cpu_ns = cpu;
    }
    w.open_epoch++;
}

/* Closes epochs below limit whose ticks are published; returns 1 if all of them were. */
static int close_epochs_below(uint64_t limit)
{
    while (w.open_epoch < limit) {
        const churn_tick *t = &churn_ticks[w.open_epoch % CHURN_TICK_SLOTS];
        uint64_t seq = atomic_load_explicit(&t->seq, memory_order_acquire);
        if (seq < w.open_epoch + 1)
            return 0; /* claimed but not yet published: next pass */
        close_epoch(t, seq != w.open_epoch + 1);
    }
    return 1;
}

/* ---- a pass: drain every ring in epoch order, each address's events in their order ----

   Within an epoch, the rings are merged by the numbers heap events took in their address's
   shard (shim.h, "order.c"): an event is applied to the live map and written once every
   lower number of its shard is, so a free on one thread comes after the allocation it frees
   on another, and the allocation that reuses an address after the free of its previous
   occupant.  Epochs only grow along a shard's numbers, so the order an epoch needs is all
   within it.  A ring whose next event waits for a lower number is parked on its shard until
   that number is written; when every ring left is parked, the missing number was pushed
   after this pass read the heads (read again), or it is still on its way: a thread was
   preempted between taking its number and pushing, a realloc pushes its free once the real
   realloc returned, and an event lost with its ring full leaves a gap.  A shard that stays
   stuck for ORDER_WAIT_NS (at the final flush, past ORDER_FINISH_NS) is let go: the waiting
   events are written as they come and counted in an UNORDERED record.  Without events
   (CHURN_EVENTS=0) the same order keeps the live map, which the per-callsite live figures
   need. */

#define ORDER_WAIT_NS 1000000000u
#define ORDER_FINISH_NS 100000000u
#define REREADS 64u               /* head reads of a level in one pass, at most */

/* The drain, with every event's work inlined into it, is compiled without GCC's SLP
   vectorizer, which packed the ring slot's fields into vector registers only to take them
   out again one by one: 13 instructions an event more (callgrind, bench/pairs.c). */
#define DRAIN static __attribute__((optimize("no-tree-slp-vectorize")))

typedef struct cursor {
    churn_thread *t;
    uint64_t tail, head;
    struct cursor *wait_next; /* parked on shard wait_shard for number wait_seq */
    uint32_t wait_seq;
    unsigned wait_shard;
    int parked;
    int exited;               /* the owner had exited: its ring may be recycled under us */
} cursor_t;

typedef struct {
    cursor_t *c;
    size_t n;
} cursors_t;

static cursor_t pass_cursors[MAX_RINGS_PER_PASS];
static cursor_t *ready[MAX_RINGS_PER_PASS];
static size_t nready;

static struct {
    uint32_t next[CHURN_LIVEMAP_SHARDS];  /* the number each shard writes next */
    cursor_t *waiting[CHURN_LIVEMAP_SHARDS];
    unsigned stuck_shards[CHURN_LIVEMAP_SHARDS]; /* shards with a parked ring */
    unsigned nstuck;
    size_t nparked;
    uint8_t listed[CHURN_LIVEMAP_SHARDS];        /* in stuck_shards */
    uint32_t stuck_next[CHURN_LIVEMAP_SHARDS];   /* next when the shard was seen stuck */
    uint64_t stuck_since[CHURN_LIVEMAP_SHARDS];  /* since when (0: not stuck) */
    uint64_t unordered;                          /* not yet written in an UNORDERED record */
    uint64_t drained;
} order;

static void add_cursor(churn_thread *t, void *ctx)
{
    cursors_t *cs = ctx;
    if (cs->n == MAX_RINGS_PER_PASS)
        return;
    cursor_t *c = &cs->c[cs->n++];
    c->t = t;
    c->tail = atomic_load_explicit(&t->tail, memory_order_relaxed);
    c->head = atomic_load_explicit(&t->head, memory_order_acquire);
    c->parked = 0;
    c->exited = atomic_load_explicit(&t->exited, memory_order_acquire);
}

static void park(cursor_t *c, unsigned shard, uint32_t seq)
{
    c->parked = 1;
    c->wait_shard = shard;
    c->wait_seq = seq;
    if (!order.listed[shard]) {
        order.listed[shard] = 1;
        order.stuck_shards[order.nstuck++] = shard;
    }
    order.nparked++;
    c->wait_next = order.waiting[shard];
    order.waiting[shard] = c;
}

/* The shard's next number is written: the ring waiting for it (one at most) goes on. */
static void unpark(unsigned shard)
{
    for (cursor_t **link = &order.waiting[shard]; *link; link = &(*link)->wait_next)
        if ((*link)->wait_seq == order.next[shard]) {
            cursor_t *c = *link;
            *link = c->wait_next;
            c->parked = 0;
            order.nparked--;
            ready[nready++] = c;
            return;
        }
}

static void unpark_all(void)
{
    for (unsigned i = 0; i < order.nstuck; i++) {
        unsigned shard = order.stuck_shards[i];
        for (cursor_t *c = order.waiting[shard]; c; c = c->wait_next)
            c->parked = 0;
        order.waiting[shard] = NULL;
        order.listed[shard] = 0;
    }
    order.nstuck = 0;
    order.nparked = 0;
}

/* The ring's events of epochs up to next, until one must wait for its shard.  The cursor's
   positions are kept in registers: the encoder's byte stores may alias any memory, so the
   compiler would otherwise load them again after every event. */
DRAIN void drain_cursor(cursor_t *c, uint64_t next, uint64_t global)
{
    churn_thread *t = c->t;
    const pid_t tid = t->tid;
    uint64_t tail = c->tail, head = c->head, drained = 0;
    const int record = !live_only, write = churn_opt.events;
    uint32_t e32 = churn_ring_epoch(t, tail);
    uint64_t e = widen_epoch(e32, global);
    while (tail < head) {
        churn_event ev;
        churn_live live;
        uint64_t at = tail;
        uint32_t at32 = churn_ring_epoch(t, at);
        if (at32 != e32) {
            e32 = at32;
            e = widen_epoch(e32, global);
        }
        if (e > next)
            break;
        unsigned slots = churn_ring_read(t, at, &ev);
        unsigned shard = churn_livemap_shard(ev.addr);
        if (churn_event_numbered(ev.type)) {
            int32_t ahead = (int32_t)(ev.seq - order.next[shard]);
            if (ahead > 0) {
                park(c, shard, ev.seq);
                break;
            }
            /* behind: a number let go of (counted then), written where it comes */
            if (ahead == 0) {
                order.next[shard]++;
                if (order.waiting[shard])
                    unpark(shard);
            }
        }
        tail += slots;
        if (e < w.first_epoch) {
            /* another trace's (attach.c): not this one's live map either */
            drained += ev.type != CHURN_EV_SKIP;
        } else if (CHURN_LIKELY(ev.type == CHURN_EV_ALLOC)) {
            churn_live *note = live_alloc(&ev, shard);
            if (record)
                record_alloc(&ev, tid, e, note, write);
            drained++;
        } else if (CHURN_LIKELY(ev.type == CHURN_EV_FREE) && live_free(&ev, shard, &live)) {
            if (record)
                record_free(&ev, tid, e, &live, write);
            drained++;
        } else {
            drained += ev.type != CHURN_EV_SKIP;
            /* (a copy: ev's address given out of line would keep it in memory here) */
            churn_event other = ev;
            record_other(&other, tid, e);
        }
        /* A producer waiting for room gets it as it is made, not after the batch. */
        if ((at ^ tail) & ~(uint64_t)(ROOM_BATCH - 1)) {
            atomic_store_explicit(&t->tail, tail, memory_order_release);
            churn_threads_room_made();
        }
    }
    c->tail = tail;
    order.drained += drained;
    atomic_store_explicit(&t->tail, tail, memory_order_release);
}

/* Drains every event of epochs up to next that its shard's order lets through, reading the
   heads again at most `rereads` times; returns 0 when rings are left parked on numbers not
   (yet) in any ring. */
DRAIN int drain_level(cursors_t *cs, uint64_t next, uint64_t global, unsigned rereads)
{
    unpark_all();
    nready = 0;
    for (size_t i = 0; i < cs->n; i++)
        if (cs->c[i].tail < cs->c[i].head)
            ready[nready++] = &cs->c[i];
    for (;;) {
        while (nready)
            drain_cursor(ready[--nready], next, global);
        if (!order.nparked)
            return 1;
        if (!rereads--)
            return 0;
        /* What a parked ring waits for may have been pushed since the heads were read. */
        for (size_t i = 0; i < cs->n; i++) {
            cursor_t *c = &cs->c[i];
            if (c->exited)
                continue;
            uint64_t head = atomic_load_explicit(&c->t->head, memory_order_acquire);
            if (head != c->head && c->tail == c->head && !c->parked)
                ready[nready++] = c;
            c->head = head;
        }
        if (!nready)
            return 0;
    }
}

/* Lets go of shards stuck for longer than bound_ns (all of them when force): their lowest
   waiting number is written next.  Returns 1 if it let go of any. */
static int let_go(uint64_t now, uint64_t bound_ns, int force)
{
    int any = 0;
    for (unsigned i = 0; i < order.nstuck; i++) {
        unsigned shard = order.stuck_shards[i];
        uint32_t lowest = 0;
        int32_t gap = INT32_MAX;
        for (cursor_t *c = order.waiting[shard]; c; c = c->wait_next) {
            int32_t d = (int32_t)(c->wait_seq - order.next[shard]);
            if (d < gap) {
                gap = d;
                lowest = c->wait_seq;
            }
        }
        if (!order.waiting[shard])
            continue;
        if (!force &&
            (!order.stuck_since[shard] || order.stuck_next[shard] != order.next[shard])) {
            order.stuck_next[shard] = order.next[shard];
            order.stuck_since[shard] = now;
        } else if (force || now - order.stuck_since[shard] >= bound_ns) {
            order.unordered += (uint64_t)gap;
            order.next[shard] = lowest;
            order.stuck_since[shard] = 0;
            any = 1;
        }
    }
    return any;
}

static void emit_unordered(void)
{
    if (order.unordered && w.seg_open && churn_emit_unordered(order.unordered))
        order.unordered = 0;
}

static void pass(int final)
{
    order.drained = 0;
    int news = w.no_loader ? churn_modules_news()
               : w.final_path ? churn_modules_try_refresh()
                              : churn_modules_refresh();
    if (news && w.seg_open)
        churn_emit_modules();
    uint64_t global = atomic_load(&churn_epoch_now);
    cursors_t cs = {pass_cursors, 0};
    churn_threads_each(add_cursor, &cs);
    /* The final flush and an exec's run on the program's thread: nothing comes after them,
       so they wait here, and let go of every stuck shard by their deadline. */
    uint64_t deadline = churn_writer_is_self() ? 0 : churn_now_ns() + ORDER_FINISH_NS;
    int stuck = 0;
    for (;;) {
        uint64_t next = UINT64_MAX;
        for (size_t i = 0; i < cs.n; i++) {
            cursor_t *c = &cs.c[i];
            if (c->tail < c->head) {
                uint64_t e = widen_epoch(churn_ring_epoch(c->t, c->tail), global);
                if (e < next)
                    next = e;
            }
        }
        if (next == UINT64_MAX || next > global)
            break;
        if (next > w.open_epoch && !close_epochs_below(next))
            break;
        uint64_t now = deadline ? churn_now_ns() : 0;
        int late = deadline && now >= deadline;
        stuck = !drain_level(&cs, next, global, late ? 0 : REREADS);
        if (!stuck)
            continue;
        if (!deadline)
            now = churn_now_ns();
        if (let_go(now, ORDER_WAIT_NS, late))
            continue;
        if (!deadline)
            break;
        static _Atomic uint32_t never;
        churn_futex_wait(&never, 0, 1000000u);
    }
    churn_threads_room_made();
    close_epochs_below(global);
    uint64_t now = churn_now_ns();
    if (!w.seg_open)
        segment_open();
    emit_unordered();
    if (final || segment_raw() >= w.target ||
        now - w.seg_open_ns >= churn_opt.flush_ms * 1000000u) {
        segment_close();
        if (!final)
            segment_open();
    } else if (!w.final_path && now - w.ckpt_ns >= CHECKPOINT_NS) {
        /* (the passes of exit, fatal signals and exec end with the segment's close) */
        checkpoint(now);
    }
    w.compress_due = w.seg_open && compress_piece();
    w.busy = order.drained >= BUSY_EVENTS || stuck;
}

static void *writer_main(void *arg)
{
    (void)arg;
    churn_in_shim = 1; /* nothing this thread does is traced */
    atomic_store(&w.started, 1);
    churn_futex_wake(&w.started);
    uint64_t alone_checked = 0;
    while (!atomic_load(&w.stop)) {
        uint64_t now = churn_now_ns();
        if (churn_epoch_timer_due(now))
            churn_epoch_advance();
        uint64_t wait = w.busy ? BUSY_POLL_NS : POLL_NS;
        if (churn_opt.epoch_ms && churn_opt.epoch_ms * 1000000u < wait)
            wait = churn_opt.epoch_ms * 1000000u;
        if (!w.compress_due)
            sleep_until_poked(wait);
        atomic_store(&wake, 0);
        now = churn_now_ns();
        uint64_t counters[CHURN_MAX_COUNTERS], counters_epoch;
        int fresh = read_counters(now, counters, &counters_epoch);
        if (lock_writer(0) == 0) {
            if (fresh) {
                memcpy(w.counters, counters, sizeof counters);
                w.counters_ns = now;
                w.counters_epoch = counters_epoch;
            }
            if (!atomic_load(&w.stop) && !atomic_load(&w.exec_pending)) {
                pass(0);
                uint64_t live_count, live_bytes;
                live_now(&live_count, &live_bytes);
                churn_blind_check(churn_now_ns(), live_bytes);
            }
            unlock_writer();
        }
        if (!w.busy && now - alone_checked >= ALONE_CHECK_NS) {
            alone_checked = now;
            int status;
            if (!atomic_load(&w.stop) && churn_exit_only_writer(&status)) {
                churn_finish(CHURN_EXIT_THREADS, status);
                syscall(SYS_exit_group, status);
            }
        }
    }
    /* Back to being counted as one of glibc's threads before its end counts it out; when
       the program is in its last exit, the writer waits for the end instead. */
    while (churn_exit_writer_returning())
        sleep_until_poked(POLL_NS);
    return NULL;
}

static void *zstd_alloc(void *opaque, size_t size)
{
    (void)opaque;
    return churn_mem_alloc(size);
}

static void zstd_free(void *opaque, void *p)
{
    (void)opaque;
    churn_mem_free(p);
}

static int start_thread(void)
{
    /* pthread_create allocates the thread's stack and TLS: not traced.  The writer starts with
       every signal blocked: the kernel hands a process-directed signal to any thread that does
       not block it, and a program that blocks SIGTERM to take it with sigwait would otherwise
       be terminated on our thread. */
    int saved = churn_in_shim;
    churn_in_shim = 1;
    atomic_store(&w.stop, 0);
    /* Its stack is a mapping of libchurn's own (os.c lists it), so that its pages count as
       libchurn's in the RSS split; mapped once, with a guard page, and reused by a writer
       started again (exec's flush, fork's child), which only starts once the last one ended. */
    static void *stack;
    if (!stack && (stack = churn_os_map(WRITER_STACK)))
        syscall(SYS_mprotect, stack, 4096, PROT_NONE);
    pthread_attr_t attr, *ap = NULL;
    if (stack && !pthread_attr_init(&attr)) {
        ap = &attr;
        if (pthread_attr_setstack(&attr, stack, WRITER_STACK)) {
            pthread_attr_destroy(&attr);
            ap = NULL;
        }
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    atomic_store(&w.started, 0);
    int rc = pthread_create(&w.thread, ap, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (ap)
        pthread_attr_destroy(&attr);
    /* Until the thread runs, glibc has not finished starting it (its rseq registration): a
       seccomp filter the program installs first thing in main, for every thread, must find
       it started, or its start fails and glibc aborts the process. */
    while (!rc && !atomic_load(&w.started))
        churn_futex_wait(&w.started, 0, 10000000u);
    if (!rc)
        churn_exit_writer_started();
    churn_in_shim = saved;
    w.running = rc == 0;
    return rc ? -1 : 0;
}

/* What a segment needs is taken at start, while memory is plentiful: a program that later
   exhausts its address space must not lose its trace too (test/t_oom.sh).  zstd sizes its
   workspace for a stream of unknown length on the first call that continues one.  The first
   blocks of the callsite, dirty-callsite and allocation-info tables are mapped here too
   (untouched, so not resident): the writer then maps nothing when it drains the first events
   and closes the first epoch, which would fall in the middle of what the program does with
   its own address space (a library unloaded and another loaded finds the range the first
   left, t_dlopen.sh). */
static void prime_buffers(void)
{
    size_t hdr = sizeof(churn_segment_header);
    site_reserve(0);
    if (!w.dirty && (w.dirty = churn_mem_alloc(MIN_DIRTY * sizeof *w.dirty)))
        w.dirty_cap = MIN_DIRTY;
    churn_seg_prime();
    churn_buf_reserve(&churn_enc.raw, COMPRESS_PIECE * 4);
    churn_buf_reserve(&w.packed, hdr + ZSTD_compressBound(churn_opt.segment_bytes));
    uint8_t out[64];
    ZSTD_inBuffer in = {out, 0, 0};
    ZSTD_outBuffer o = {out, sizeof out, 0};
    ZSTD_compressStream2(w.zstd, &o, &in, ZSTD_e_continue);
    ZSTD_CCtx_reset(w.zstd, ZSTD_reset_session_only);
}

/* CHURN_SEGMENT_KB too large for CHURN_RING_MB (4 MiB segments in a 1 MiB ring) would make
   every segment too big to write: a trace of no events.  The segments are cut to fit, and
   said so. */
static void fit_segments(void)
{
    size_t fits = segment_raw_fitting(churn_outfile_ring_room());
    if (churn_opt.segment_bytes <= fits)
        return;
    churn_log("CHURN_RING_MB=%llu is too small for segments of CHURN_SEGMENT_KB=%llu: segments "
              "are cut to %zu KiB before compression, so that the ring's %llu KiB hold four of "
              "them at the least (a larger CHURN_RING_MB keeps larger segments)",
              (unsigned long long)(churn_opt.ring_bytes >> 20),
              (unsigned long long)(churn_opt.segment_bytes >> 10), fits >> 10,
              (unsigned long long)(churn_outfile_ring_room() >> 10));
    churn_opt.segment_bytes = fits;
}

int churn_writer_start(void)
{
    fit_segments();
    ZSTD_customMem mem = {zstd_alloc, zstd_free, NULL};
    w.zstd = ZSTD_createCCtx_advanced(mem);
    if (!w.zstd)
        return -1;
    ZSTD_CCtx_setParameter(w.zstd, ZSTD_c_compressionLevel, churn_opt.zstd_level);
    prime_buffers();
    w.last_end_ns = churn_start_ns;
    w.last_cpu_ns = churn_start_cpu_ns;
    return start_thread();
}

/* Any thread, the writer included (the last thread left, exit.c). */
void churn_writer_finish(int how, int detail)
{
    atomic_store(&w.stop, 1);
    churn_writer_poke();
    /* This thread was interrupted holding the writer lock (an exec flush, fork): the trace
       cannot be finished consistently; what is on disk stays valid.  Or the writer is wedged
       (a stalled disk): the same. */
    if (w.owner_tid == churn_gettid() || lock_writer(FINISH_WAIT_NS))
        return;
    w.final_path = 1;
    w.no_loader = how == CHURN_EXIT_SIGNAL;
    /* The epoch in progress ends here, so its figures are in the trace. */
    w.last_epoch = churn_epoch_advance_last() - 1;
    w.last_ended = 1;
    pass(0);
    if (w.seg_open)
        churn_emit_exit((uint64_t)how, detail);
    pass(1);
    /* The last segment was lost (libchurn's memory or the disk ran out): a short one, written
       now that it may fit, says how many events were dropped and how the process ended. */
    if (drops_owed()) {
        segment_open();
        w.seg_first_epoch = w.open_epoch - 1;
        if (w.seg_open)
            churn_emit_exit((uint64_t)how, detail);
        segment_close();
    }
    churn_outfile_close();
    unlock_writer();
}

/* Before exec (exec.c): the image and the writer are about to go.  Every ring is drained and
   the segment written, ending with an EXIT of kind exec; a new segment is opened, where the
   trace goes on if the exec fails (a later EXIT then supersedes this one).  Until then the
   writer holds off: a pass between this flush and the exec would write records after the
   EXIT, which a reader takes for a failed exec, and a follower then for a process gone. */
int churn_writer_exec_flush(void)
{
    if (churn_writer_is_self() || w.owner_tid == churn_gettid() || lock_writer(FINISH_WAIT_NS))
        return -1;
    w.final_path = 1; /* exec is async-signal-safe: a handler may call it */
    w.last_epoch = churn_epoch_advance_last() - 1;
    w.last_ended = 1;
    pass(0);
    if (w.seg_open)
        churn_emit_exit(CHURN_EXIT_EXEC, 0);
    if (w.seg_open)
        segment_close();
    segment_open();
    w.last_ended = 0; /* the exec may fail: the trace goes on in the epoch after */
    w.final_path = 0;
    atomic_store(&w.exec_pending, 1);
    unlock_writer();
    return 0;
}

/* The exec came back: it failed, and the trace goes on. */
void churn_writer_exec_failed(void)
{
    atomic_store(&w.exec_pending, 0);
}

/* The process single-threaded again for a call that needs it (namespaces.c): the writer
   ends its pass and its thread is joined.  Events wait in the rings meanwhile. */
int churn_writer_pause(void)
{
    if (!w.running || churn_writer_is_self() || atomic_load(&churn_state) != CHURN_ON)
        return 0;
    atomic_store(&w.stop, 1);
    churn_writer_poke();
    pthread_join(w.thread, NULL);
    w.running = 0;
    return 1;
}

void churn_writer_join(void)
{
    if (!w.running || churn_writer_is_self() || !atomic_load(&w.stop))
        return;
    pthread_join(w.thread, NULL);
    w.running = 0;
    /* Only the writer and the finisher touch these, and both are done. */
    ZSTD_freeCCtx(w.zstd);
    w.zstd = NULL;
    churn_mem_free(churn_enc.raw.buf);
    churn_mem_free(w.packed.buf);
    churn_mem_free(w.sites);
    churn_mem_free(w.dirty);
    memset(&churn_enc.raw, 0, sizeof churn_enc.raw);
    memset(&w.packed, 0, sizeof w.packed);
    w.sites = NULL;
    w.dirty = NULL;
    w.nsites = w.sites_cap = w.ndirty = w.dirty_cap = 0;
}

void churn_writer_resume(void)
{
    if (atomic_load(&churn_state) == CHURN_ON && start_thread())
        churn_log("cannot restart the writer thread; the trace ends here");
}

void churn_writer_reset(uint64_t first_epoch)
{
    /* Numbers of segments go on from the last trace's: what pyframes.c and codemap.c noted
       as named in one of them is not in force in the new trace. */
    uint32_t segments = churn_enc.segments;
    /* What a start that failed left (churn_writer_join frees them after a trace). */
    ZSTD_freeCCtx(w.zstd);
    churn_mem_free(churn_enc.raw.buf);
    churn_mem_free(w.packed.buf);
    churn_mem_free(w.sites);
    churn_mem_free(w.dirty);
    memset(&w, 0, sizeof w);
    memset(&churn_enc, 0, sizeof churn_enc);
    churn_enc.segments = segments;
    churn_enc.key_in = segments + 1;
    w.open_epoch = w.first_epoch = first_epoch;
    w.dropped_reported = atomic_load(&churn_dropped_events);
    /* Numbers taken before now are behind the order's next ones: their events, if they come
       at all, are written where they come (and dropped by their epoch). */
    memset(&order, 0, sizeof order);
    churn_order_next(order.next);
    atomic_store(&wake, 0);
    atomic_store(&sleeping, 0);
}

void churn_writer_before_fork(void)
{
    lock_writer(0);
}

void churn_writer_after_fork_parent(void)
{
    unlock_writer();
}

static void rebuild_site(uintptr_t addr, const churn_live *v, void *ctx)
{
    (void)addr;
    (void)ctx;
    site_reserve(v->stack);
    if (v->stack < w.nsites) {
        w.sites[v->stack].live_count++;
        w.sites[v->stack].live_bytes += v->size;
    }
    w.live_count++;
    w.live_bytes += v->size;
}

/* In a fork's child, before its rings are dropped: the events still in every ring happened
   in the parent, whose trace writes them, but they made the heap the child inherited, so
   they go into the child's live map.  The numbers of threads caught between taking one and
   pushing its event (they are not in the child) are let go at once. */
void churn_writer_fork_child_catch_up(void)
{
    uint64_t global = atomic_load(&churn_epoch_now);
    cursors_t cs = {pass_cursors, 0};
    churn_threads_each(add_cursor, &cs);
    live_only = 1;
    while (!drain_level(&cs, UINT64_MAX, global, 0) && let_go(0, 0, 1))
        ;
    live_only = 0;
    unpark_all();
    order.unordered = 0;
}

/* The child starts a trace of its own.  What the parent had buffered is the parent's to
   write; the child's live figures are rebuilt from the live map, which fork copied whole. */
void churn_writer_after_fork_child(int follow)
{
    w.running = 0;
    atomic_store(&w.exec_pending, 0); /* another thread's exec is not this child's */
    if (!follow) {
        unlock_writer();
        return;
    }
    churn_enc.raw.len = 0;
    w.seg_open = 0;
    w.chain_whole = 0; /* a trace of its own, which starts with a key segment */
    for (size_t i = 0; i < w.nsites; i++)
        memset(&w.sites[i], 0, sizeof w.sites[i]);
    w.ndirty = 0;
    w.live_count = w.live_bytes = 0;
    churn_livemap_each(rebuild_site, NULL);
    memset(w.classes, 0, sizeof w.classes);
    memset(w.class_dirty, 0, sizeof w.class_dirty);
    memset(&w.epoch_totals, 0, sizeof w.epoch_totals);
    w.late = 0;
    w.dropped_reported = atomic_load(&churn_dropped_events);
    w.write_dropped = w.too_big_dropped = 0;
    churn_order_next(order.next);
    memset(order.stuck_since, 0, sizeof order.stuck_since);
    order.unordered = 0;
    unlock_writer();
    start_thread();
}
