/*
 * The libchurn trace format, defined once for both sides: the shim writes it, the analyzer
 * reads it.  docs/format.md is the prose specification of what is laid out here; change both
 * together and bump CHURN_FORMAT_VERSION on any incompatible change.
 *
 * A trace file is a sequence of zstd frames, so an unwrapped trace is a valid .zst stream:
 *
 *   file header   zstd skippable frame (magic CHURN_SKIPPABLE_MAGIC) holding churn_file_header
 *   segment       zstd skippable frame holding churn_segment_header, immediately followed by
 *                 one zstd frame whose content is the segment's record stream
 *   segment ...
 *
 * The file is a ring: when the next segment would pass the bound given in the file header,
 * writing wraps to CHURN_FILE_HEADER_BYTES and overwrites the oldest segments.  A reader scans
 * for segment headers, keeps those whose header and payload checksums verify, and orders them
 * by sequence number.  A key segment can be decoded on its own (see CHURN_REC_CARRY); a delta
 * segment (version 8) needs the segments since the last key segment before it.
 */
#ifndef CHURN_FORMAT_H
#define CHURN_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Version 2 added CHURN_REC_SIZE_CLASSES and the shared frames of CHURN_REC_STACK, version 3
   CHURN_REC_STACK_SAMPLE, version 4 the order of each address's events (docs/format.md,
   "Order of events") and CHURN_REC_UNORDERED, version 5 the open segment's checkpoints
   (churn_open_segment_header), version 6 CHURN_MAP_ARENA and CHURN_REC_CODE, version 7
   CHURN_CODE_PY and the stack ids of ALLOC_INFO, CARRY and EPOCH_END less the previous
   one's, version 8 delta segments (CHURN_SEGMENT_DELTA); readers take 1 to 8. */
#define CHURN_FORMAT_VERSION 8u
#define CHURN_FORMAT_VERSION_MIN 1u

/* zstd reserves 0x184D2A50..0x184D2A5F for skippable frames; decoders skip them. */
#define CHURN_SKIPPABLE_MAGIC 0x184D2A5Cu
#define CHURN_FILE_MAGIC "CHURNTRC"
#define CHURN_SEGMENT_MAGIC 0x47534843u /* "CHSG" little-endian */

/*
 * Version 8: a segment is a key segment or a delta segment, which the magic of its header
 * says (closed or open): a delta segment's has this bit set as well ("CHSg", "CHSo").  A key
 * segment is self-contained: it defines every stack its records name, names the code of
 * their frames, and its CARRY lists the live objects of every stack.  A delta segment defines
 * and names only what no segment since the last key segment before it did, and its CARRY has
 * the live totals alone (n = 0).  A reader starts at a key segment, and after a segment it
 * could not read goes on at the next key segment.  Segments of versions 1 to 7 are all key.
 */
#define CHURN_SEGMENT_DELTA 0x20000000u

static inline int churn_segment_is_delta(uint32_t magic)
{
    return (magic & CHURN_SEGMENT_DELTA) != 0;
}
static inline uint32_t churn_segment_kind_magic(uint32_t magic)
{
    return magic & ~CHURN_SEGMENT_DELTA;
}

/* All multi-byte header fields are little-endian (x86-64 native). */
typedef struct churn_file_header {
    uint32_t frame_magic;    /* CHURN_SKIPPABLE_MAGIC */
    uint32_t frame_size;     /* sizeof(churn_file_header) - 8 */
    char magic[8];           /* CHURN_FILE_MAGIC, not NUL-terminated */
    uint32_t version;        /* CHURN_FORMAT_VERSION */
    uint32_t flags;          /* CHURN_FILE_* */
    uint64_t ring_bytes;     /* bound of the file; segments wrap to CHURN_FILE_HEADER_BYTES */
    uint64_t pid;
    uint64_t start_realtime_ns; /* CLOCK_REALTIME at start, for humans */
    uint32_t page_size;
    uint32_t header_crc;     /* crc32 of this struct with header_crc = 0 */
} churn_file_header;

#define CHURN_FILE_HEADER_BYTES ((uint64_t)sizeof(churn_file_header))

/* Right after the file header, the libchurn that wrote the trace: a skippable frame that is
   not a segment, so readers that do not know it pass over it (no version bump); segments
   start, and the ring wraps, after it.  Traces without it are older. */
#define CHURN_PRODUCER_MAGIC "CHURNVER"
typedef struct churn_producer_frame {
    uint32_t frame_magic;    /* CHURN_SKIPPABLE_MAGIC */
    uint32_t frame_size;     /* sizeof(churn_producer_frame) - 8 */
    char magic[8];           /* CHURN_PRODUCER_MAGIC, not NUL-terminated */
    char version[24];        /* CHURN_VERSION, NUL-padded */
    uint32_t reserved;       /* 0 */
    uint32_t crc;            /* crc32 of this struct with crc = 0 */
} churn_producer_frame;
#define CHURN_FILE_EVENTS 0x1u /* allocation events are recorded, not only histograms */
/* The trace starts at a `churn attach` to a running process: objects live before it are not
   in it, and a free of one is a FREE_UNKNOWN. */
#define CHURN_FILE_ATTACHED 0x2u

typedef struct churn_segment_header {
    uint32_t frame_magic;    /* CHURN_SKIPPABLE_MAGIC */
    uint32_t frame_size;     /* sizeof(churn_segment_header) - 8 */
    uint32_t magic;          /* CHURN_SEGMENT_MAGIC, | CHURN_SEGMENT_DELTA in a delta one */
    uint32_t version;        /* CHURN_FORMAT_VERSION */
    uint64_t seq;            /* 0, 1, 2, ... in write order */
    uint64_t first_epoch;    /* epoch current when the segment was opened */
    uint64_t last_epoch;     /* epoch current when it was closed */
    uint32_t raw_bytes;      /* size of the decompressed record stream */
    uint32_t zstd_bytes;     /* size of the zstd frame that follows */
    uint32_t payload_crc;    /* crc32 of the zstd frame */
    uint32_t header_crc;     /* crc32 of this struct with header_crc = 0 */
} churn_segment_header;

/*
 * Version 5: the segment being filled is written at checkpoints, so that a process killed
 * (SIGKILL, the OOM killer) or ended by an exit_group libchurn cannot see loses only what came
 * after the last one.  At its place in the ring, a segment still open has this header in
 * front of the frame so far: its zstd frame header and complete blocks, the frame not ended.
 * The writer writes the new part of the frame first and this header after it, so a header
 * never counts bytes that are not in the file; closing the segment writes the rest of the
 * frame, then the closed header over this one.  A reader takes an open segment only as the
 * newest of the trace, and only when its complete blocks decompress to exactly raw_bytes.
 */
#define CHURN_SEGMENT_OPEN_MAGIC 0x4f534843u /* "CHSO" little-endian */
typedef struct churn_open_segment_header {
    uint32_t frame_magic;    /* CHURN_SKIPPABLE_MAGIC */
    uint32_t frame_size;     /* sizeof(churn_open_segment_header) - 8 */
    uint32_t magic;          /* CHURN_SEGMENT_OPEN_MAGIC, | CHURN_SEGMENT_DELTA likewise */
    uint32_t version;        /* CHURN_FORMAT_VERSION */
    uint64_t seq;            /* the sequence number the closed segment will have */
    uint64_t first_epoch;    /* epoch current when the segment was opened */
    uint64_t checkpoint_ns;  /* CLOCK_MONOTONIC at the checkpoint: the trace holds every
                                event the writer had taken from the threads by then */
    uint32_t raw_bytes;      /* record bytes in the complete blocks, whole records only */
    uint32_t zstd_bytes;     /* bytes of the frame so far that follow the header */
    uint32_t payload_crc;    /* crc32 of those zstd_bytes */
    uint32_t header_crc;     /* crc32 of this struct with header_crc = 0 */
} churn_open_segment_header;

/* How many of a segment's latest stack definitions a STACK record may share frames with. */
#define CHURN_STACK_REFS 16u
/* The deepest stack a record may describe (CHURN_STACK_DEPTH's bound). */
#define CHURN_STACK_MAX_DEPTH 256u

/* A segment's decompressed size is capped so a reader never allocates on a liar's word. */
#define CHURN_SEGMENT_MAX_RAW (64u << 20)

/*
 * Records.  Each record is a tag byte followed by unsigned LEB128 varints (CHURN_V below);
 * signed quantities are zigzag-encoded (CHURN_Z).  Strings and byte strings are a varint
 * length followed by the bytes.  Per-stream state (current thread, current epoch, previous
 * address) starts at zero at the beginning of every segment.
 */
enum churn_record_tag {
    /* V seq, V epoch at open, V monotonic ns at open */
    CHURN_REC_SEGMENT_START = 0x01,
    /* V module id, V load bias, V start, V end (executable address range, absolute),
       V unloaded (0 while loaded; else how many modules were known when its unload was
       noticed), bytes build id, string path.  Ids are 0, 1, 2, ... in the order modules were
       found, never reused.  Re-sent in every segment and whenever the map changes.  An
       unload noticed takes an id of its own, counted in the unloaded modules' field: a
       module with an empty range (start = end = 0) and an empty path, unloaded itself, so
       that a stack first seen before the unload has a lower generation than the field.
       (Version 1: no unloaded field.) */
    CHURN_REC_MODULE = 0x02,
    /* V stack id, V depth, V generation (how many modules were known when the stack was
       first seen: its frames are in modules with a lower id that were not unloaded at that
       generation, or else in the first module found after it), V ref, with ref != 0
       V shared, then (depth - shared) x
       Z (ip - previous ip, first against 0), innermost frame first.  ref 0: no frame is
       shared (shared is absent and 0).  Otherwise ref is one of the CHURN_STACK_REFS stacks
       defined last in this segment, and this stack's outermost `shared` frames (1 <= shared
       <= depth and <= ref's depth) are ref's outermost ones: deep stacks that differ only in
       their innermost frames cost only those.  Stack id 0 is "no stack" and is never
       defined.  (Version 1: V stack id, V depth, depth x Z, no generation, nothing
       shared.)  Version 8: defined in a delta segment only when no segment since the last
       key segment did. */
    CHURN_REC_STACK = 0x03,
    /* V tid: the following events happened on this thread */
    CHURN_REC_THREAD = 0x04,
    /* V epoch: the following events happened in this epoch */
    CHURN_REC_EPOCH_TAG = 0x05,
    /* string allocator name, V page size, V counter count, then count x string counter name:
       the counters that CHURN_REC_EPOCH_END lists, in this order. */
    CHURN_REC_ALLOCATOR = 0x06,
    /* State to carry on from here when older segments are gone:
       V live count, V live bytes, V n, then n x (V stack id, V live count, V live bytes)
       for every stack with live objects when the segment was opened.  Version 7: each stack
       id less the previous entry's (the first's less 0), modulo 2^64.  Version 8: n = 0 in
       a delta segment, whose totals check what the events since the key segment built. */
    CHURN_REC_CARRY = 0x07,
    /* V count, V reason (CHURN_DROP_*): events that are not in the trace */
    CHURN_REC_DROPPED = 0x08,
    /* V how (CHURN_EXIT_*), V detail (exit status or signal number): the process ended
       here; written last, in the final segment.  A trace without it was cut short. */
    CHURN_REC_EXIT = 0x09,
    /* V n, then n x (V object size, V span bytes): the allocator's size classes as it
       reports them itself, each with the bytes of one span (a run of pages holding objects
       of that class only).  Sent after CHURN_REC_ALLOCATOR, or as soon as the allocator can
       be asked, by ways in that can ask (Google tcmalloc's stats text); the analyzer's
       fragmentation model (docs/fragmentation.md) uses it over its built-in rules. */
    CHURN_REC_SIZE_CLASSES = 0x0b,
    /* V n >= 2: stacks are sampled (CHURN_STACK_SAMPLE): one allocation in n on average, at
       random, has its stack; the others have stack id 0, and so do their frees.  In every
       segment after CHURN_REC_ALLOCATOR when n >= 2; absent means every allocation has its
       stack.  Counts and sizes of all events stay exact; a callsite's figures times n
       estimate what all of its allocations did. */
    CHURN_REC_STACK_SAMPLE = 0x0c,
    /* V n >= 1: allocation stacks the shim cut short so far in this process (a running
       total), for want of stack to walk on (a signal handler on a small sigaltstack): each
       of them is the allocating function's caller alone, or no frame.  Near the end of a
       segment, in every segment from the first such stack on; absent: none was cut. */
    CHURN_REC_SHORT_STACKS = 0x0d,
    /* V epoch, V age ns: the allocator counters in that epoch's EPOCH_END, which follows, are
       not a reading taken between its end and the next epoch's end.  age >= 1: the writer's
       last reading, taken age ns before the epoch ended (the exit, fatal-signal and exec
       paths never ask the allocator, as the ending thread may hold its locks; epochs that end
       faster than the writer reads the counters); age 0: a reading taken after a later epoch
       ended too.  Absent: read after the epoch's end, before the next epoch's. */
    CHURN_REC_COUNTERS_STALE = 0x0e,
    /* V n (version 4): the writer stopped waiting for n events that held their place in an
       address's order (an event lost with its ring full, a thread stopped between a live-map
       update and its push): the events of those addresses that follow in the stream may
       come before ones that happened earlier. */
    CHURN_REC_UNORDERED = 0x0f,

    /* V n >= 1: allocations are sampled (CHURN_SAMPLE_BYTES), a Poisson process over the
       bytes allocated with a mean of n bytes between samples: an allocation of s bytes is
       in the trace with probability p(s) = 1 - exp(-s/n), with its free, and the other
       allocations and frees are not (no FREE_UNKNOWN either).  EPOCH_END's allocs, frees
       and alloc bytes count every allocation and free all the same; its free bytes, live
       count, live bytes, size classes and callsites, and CARRY, are the sampled objects'
       alone.  A sampled object of s bytes stands for 1/p(s) objects.  In every segment
       after CHURN_REC_ALLOCATOR; absent: every allocation is in the trace. */
    CHURN_REC_SAMPLE_BYTES = 0x70,

    /* V start, V size, string name: the code at [start, start + size), in no module, is what
       the runtime that made it calls `name` in its perf map (/tmp/perf-<pid>.map: V8's
       "JS:*handler /srv/app.js:12:30", CPython's "py::handle:/srv/app.py").  Written
       before the first STACK of the segment with a frame in it (version 6; version 8: of
       the segments since the last key segment).  Kind CHURN_CODE_PY in the low nibble
       (version 7): V code id, string "qualname:file": the names of every Python frame of
       that code object, CHURN_PY_FRAME addresses. */
    CHURN_REC_CODE = 0x80,

    /* V requested size, V usable - requested, V stack id: defines the next allocation info
       of this segment (indices 0, 1, 2, ... in order of appearance).  Version 7: the stack
       id a Z, less the segment's previous ALLOC_INFO's (the first's less 0). */
    CHURN_REC_ALLOC_INFO = 0x0a,

    /* Event records.  Addresses are coded against the segment's churn_coder (coding.h); the
       decoder applies the same updates as the encoder after every event:
       ALLOC -> churn_coder_allocated, FREE and FREE_SHORT -> churn_coder_freed,
       FREE_UNKNOWN -> prev_addr = address, MAP -> prev_map_addr = address.
       Both sides also keep the segment's live map: address -> (allocation number, info
       index, epoch) of every ALLOC of this segment (a later ALLOC of the same address
       replaces the entry), removed by any FREE or FREE_SHORT of that address. */

    /* Allocation, kind in the low nibble (CHURN_ALLOC_*):
       V allocation info index, V address code (churn_encode_alloc_addr with the info's
       usable size) */
    CHURN_REC_ALLOC = 0x10,
    /* Free, kind in the low nibble (CHURN_FREE_*), self-describing:
       Z address - prev_addr, V requested size, V usable - requested, V stack id of the
       allocation, V age in epochs (this event's epoch - the allocation's epoch) */
    CHURN_REC_FREE = 0x20,
    /* Free of a pointer the shim never saw allocated: Z address - prev_addr */
    CHURN_REC_FREE_UNKNOWN = 0x30,
    /* Page-level call, kind in the low nibble (CHURN_MAP_*):
       Z address - prev_map_addr, V length, V a (prot | flags << 8, or advice), V b (new
       address for mremap, else 0), V stack id; flag CHURN_MAP_INTERNAL in the tag's 0x08 bit */
    CHURN_REC_MAP = 0x40,
    /* Free of an object allocated in this segment, kind in the low nibble (CHURN_FREE_*):
       V distance >= 1: the object is the one allocated by the distance-th last ALLOC of this
       segment (allocations so far - its number), which must still be in the segment's live
       map.  Size, stack and age come from that entry. */
    CHURN_REC_FREE_SHORT = 0x60,

    /* End of an epoch:
       V epoch, V start monotonic ns, V wall ns, V cpu ns, V rss bytes,
       V allocs, V frees, V alloc bytes, V free bytes, V late events,
       V live count, V live bytes (process-wide at epoch end),
       V n size classes, n x (V class, V allocs, V frees, V alloc bytes, V free bytes),
       V n callsites, n x (V stack id, V allocs, V frees, V alloc bytes, V free bytes,
                           V live count, V live bytes), the stack id a Z in version 7:
                           the id less the previous callsite's (the first's less 0),
       V n counters, n x V value (names from the segment's CHURN_REC_ALLOCATOR) */
    CHURN_REC_EPOCH_END = 0x50,
};

#define CHURN_REC_KIND_MASK 0x0fu
#define CHURN_REC_CLASS_MASK 0xf0u

enum churn_alloc_kind {
    CHURN_ALLOC_MALLOC = 0,
    CHURN_ALLOC_CALLOC = 1,
    CHURN_ALLOC_REALLOC = 2,
    CHURN_ALLOC_ALIGNED = 3, /* memalign, posix_memalign, aligned_alloc, valloc, pvalloc */
    CHURN_ALLOC_NEW = 4,
    CHURN_ALLOC_NEW_ARRAY = 5,
    CHURN_ALLOC_KINDS
};

enum churn_free_kind {
    CHURN_FREE_FREE = 0,
    CHURN_FREE_REALLOC = 1, /* the old block of a realloc that moved or resized */
    CHURN_FREE_DELETE = 2,
    CHURN_FREE_DELETE_ARRAY = 3,
    CHURN_FREE_KINDS
};

enum churn_map_kind {
    CHURN_MAP_MMAP = 0,
    CHURN_MAP_MUNMAP = 1,
    CHURN_MAP_MREMAP = 2,
    CHURN_MAP_MADVISE = 3,
    CHURN_MAP_BRK = 4, /* address = new break, length = growth (zigzag in a) */
    /* The range is the heap of an allocator traced beside the one behind malloc (an arena of
       CPython's pymalloc), its objects in units of a bytes aligned to a, each holding objects
       of one size; a = 0: the range is given back (version 6) */
    CHURN_MAP_ARENA = 5,
    CHURN_MAP_KINDS
};
#define CHURN_MAP_INTERNAL 0x08u /* called from inside the allocator or libchurn's guard */

enum churn_code_kind {
    CHURN_CODE_RANGE = 0, /* a perf map's entry: a range and its name */
    CHURN_CODE_PY = 1,    /* a Python code object's frames (version 7) */
    CHURN_CODE_KINDS
};

/* A Python frame read from CPython's frame chain has the address CHURN_PY_FRAME_BASE |
   code id << CHURN_PY_CODE_SHIFT | line << 1 | 1, in no module (a code id numbers a code
   object within the process), and is named "py::qualname:file:line" by a CODE record of
   kind CHURN_CODE_PY for its code id or of kind CHURN_CODE_RANGE for [a - 1, a + 1). */
#define CHURN_PY_FRAME_BASE 0xfe00000000000000ull
#define CHURN_PY_CODE_SHIFT 24u
#define CHURN_PY_LINE_MASK 0x7fffffull /* line << 1 | 1 fills the bits below the code id */
#define CHURN_PY_CODE_MASK 0xffffffffull

static inline int churn_py_frame(uint64_t a)
{
    return (a & CHURN_PY_FRAME_BASE) == CHURN_PY_FRAME_BASE && (a & 1);
}
static inline uint64_t churn_py_frame_code(uint64_t a)
{
    return (a & ~CHURN_PY_FRAME_BASE) >> CHURN_PY_CODE_SHIFT;
}
static inline unsigned churn_py_frame_line(uint64_t a)
{
    return (unsigned)((a >> 1) & CHURN_PY_LINE_MASK);
}

enum churn_exit_how {
    CHURN_EXIT_NORMAL = 1,  /* exit() or return from main: destructors ran */
    CHURN_EXIT_UNDERSCORE = 2, /* _exit() / _Exit(): no destructors */
    CHURN_EXIT_SIGNAL = 3,  /* a fatal signal; detail is the signal number */
    CHURN_EXIT_EXEC = 4,    /* exec replaced the image (written just before the call); when
                               the call failed, the trace goes on and a later EXIT counts */
    CHURN_EXIT_QUICK = 5,   /* quick_exit(): at_quick_exit handlers ran, no destructors */
    CHURN_EXIT_THREADS = 6, /* every thread ended by the exit system call, none called exit
                               or exit_group (a seccomp-strict program); detail is the status
                               the process ended with */
    CHURN_EXIT_DETACH = 7,  /* the process goes on, untraced; detail is why (below) */
};

/* The detail of CHURN_EXIT_DETACH. */
enum churn_detach_reason {
    CHURN_DETACH_COMMAND = 0, /* `churn detach` */
    CHURN_DETACH_SECCOMP = 1, /* the program installed a seccomp filter that stops a system
                                 call libchurn makes */
};

enum churn_drop_reason {
    CHURN_DROP_RING_FULL = 1, /* a thread buffer was full and waiting was not safe */
    CHURN_DROP_WRITE_ERROR = 2, /* the output could not be written (disk full, ...) */
    CHURN_DROP_SEGMENT_TOO_BIG = 3, /* a segment larger than the whole ring */
};

/*
 * Size classes shared by the shim's histograms and the analyzer: 16-byte steps up to 128,
 * then four classes per power of two.  Class boundaries are upper bounds, inclusive.
 */
#define CHURN_SIZE_CLASSES 248

static inline unsigned churn_size_class(uint64_t size)
{
    if (size <= 128)
        return (unsigned)((size + 15) >> 4); /* 0 -> class 0, 1..16 -> 1, ..., 128 -> 8 */
    unsigned lg = 63u - (unsigned)__builtin_clzll(size - 1); /* size - 1 in [2^lg, 2^(lg+1)) */
    unsigned quarter = (unsigned)(((size - 1) >> (lg - 2)) & 3u);
    unsigned cls = 9 + (lg - 7) * 4 + quarter;
    return cls < CHURN_SIZE_CLASSES ? cls : CHURN_SIZE_CLASSES - 1;
}

static inline uint64_t churn_size_class_max(unsigned cls)
{
    if (cls <= 8)
        return (uint64_t)cls << 4;
    unsigned lg = 7 + (cls - 9) / 4;
    unsigned quarter = (cls - 9) % 4;
    if (lg >= 62)
        return UINT64_MAX;
    return ((uint64_t)1 << lg) + ((uint64_t)(quarter + 1) << (lg - 2));
}

/* Varints: unsigned LEB128, at most 10 bytes for a 64-bit value. */
#define CHURN_VARINT_MAX 10

static inline size_t churn_put_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

static inline uint64_t churn_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t churn_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Reads a varint from [*p, end); returns 0 and leaves *p on a truncated or overlong one. */
static inline int churn_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    const uint8_t *q = *p;
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && q < end; shift += 7) {
        uint8_t b = *q++;
        if (shift == 63 && b > 1)
            return 0;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* CRC-32 (IEEE, reflected), eight bytes a step with eight 256-entry tables built on first
   use (slicing-by-8): about a byte per cycle, so checking a whole trace on open stays small
   next to decoding it, with no dependency. */
static inline uint32_t churn_crc32(uint32_t crc, const void *data, size_t len)
{
    static uint32_t table[8][256];
    static volatile int ready;
    if (!ready) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
            table[0][i] = c;
        }
        for (uint32_t i = 0; i < 256; i++)
            for (int t = 1; t < 8; t++)
                table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xffu];
        ready = 1;
    }
    const uint8_t *p = (const uint8_t *)data;
    crc = ~crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= crc; /* little-endian, as every header field */
        crc = table[7][lo & 0xffu] ^ table[6][(lo >> 8) & 0xffu] ^
              table[5][(lo >> 16) & 0xffu] ^ table[4][lo >> 24] ^
              table[3][hi & 0xffu] ^ table[2][(hi >> 8) & 0xffu] ^
              table[1][(hi >> 16) & 0xffu] ^ table[0][hi >> 24];
    }
    for (size_t i = 0; i < len; i++)
        crc = (crc >> 8) ^ table[0][(crc ^ p[i]) & 0xffu];
    return ~crc;
}

static inline uint32_t churn_segment_header_crc(const churn_segment_header *h)
{
    churn_segment_header c;
    memcpy(&c, h, sizeof c);
    c.header_crc = 0;
    return churn_crc32(0, &c, sizeof c);
}

static inline uint32_t churn_open_segment_header_crc(const churn_open_segment_header *h)
{
    churn_open_segment_header c;
    memcpy(&c, h, sizeof c);
    c.header_crc = 0;
    return churn_crc32(0, &c, sizeof c);
}

static inline uint32_t churn_producer_frame_crc(const churn_producer_frame *p)
{
    churn_producer_frame c;
    memcpy(&c, p, sizeof c);
    c.crc = 0;
    return churn_crc32(0, &c, sizeof c);
}

static inline uint32_t churn_file_header_crc(const churn_file_header *h)
{
    churn_file_header c;
    memcpy(&c, h, sizeof c);
    c.header_crc = 0;
    return churn_crc32(0, &c, sizeof c);
}

#endif
