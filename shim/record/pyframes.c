/*
 * Python frames from the interpreter's own frame chain, for CPython 3.11, 3.12 and 3.13: the
 * thread state's current _PyInterpreterFrame, its code object and its instruction pointer,
 * each frame's line by the code's location table (the line tracemalloc names).  A perf map
 * (codemap.c) names a Python function by its file only, and CPython before 3.12 writes none.
 *
 * On the allocating thread, when it holds the GIL (the GIL's holder is its thread state):
 * each frame becomes an address that no module holds, PY_BASE | code id << ID_SHIFT |
 * line << 1 | 1, where the code id numbers the code object in a table of names (qualified
 * name and file) read once per code object.  Those addresses are put into the native stack
 * outward of the _PyEval_EvalFrameDefault frame that runs them (the frames one call of it
 * runs end at an entry frame), so the stack table, its cache and the trace take them as
 * frames.  The writer names each code object in a CODE record of kind py ("qualname:file"),
 * once from one key segment to the next, which names every frame of it, its line from its
 * address.
 *
 * Reads never fault: every read is of pages the kernel said are readable (process_vm_readv
 * on the process itself, churn_os_read_own, none under a seccomp filter libchurn did not
 * see installed; once per page, remembered), every pointer is checked to be a user
 * address, the code object's type is PyCode_Type's address and the chain is bounded.  The
 * layouts are those of the version's headers, taken only for the versions they were
 * checked against (3.11 and 3.12 by known offsets, 3.13 by its _Py_DebugOffsets); another
 * version gets no Python frames.  Nothing here takes the GIL, calls into Python or writes
 * to its memory.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "record/encode.h"
#include "shim.h"

#define ID_SHIFT 24
#define LINE_MAX_ ((1u << (ID_SHIFT - 1)) - 1)
#define CODES_MAX (1u << 16)
#define INDEX_SLOTS (1u << 17)
#define PAGES 4096u
#define SITES 1024u
#define NEAR 1024u
#define MINE 32u
#define NAME_BYTES 512u
#define NAMES_CHUNK (1u << 20)
#define FRAMES_MAX 64u
/* Stack the read takes below its caller's frame, at most; with less left it reads nothing. */
#define STACK_ROOM 4096u
#define NONE_LEFT ((size_t)-1)
#define HASH_STEP 0xff51afd7ed558ccdull

/* Where the fields are, by version (offsets in bytes). */
typedef struct layout {
    int holder_in_interp; /* 3.12, 3.13: the GIL's last holder and lock in the interp */
    size_t rt_tstate;     /* 3.11: _PyRuntime.gilstate.tstate_current */
    size_t rt_interp;     /* _PyRuntime.interpreters.head */
    size_t in_locked, in_holder;
    size_t ts_thread_id; /* pthread_self() of the thread */
    size_t ts_cframe;    /* NONE_LEFT: the frame is the thread state's own (3.13) */
    size_t cf_frame;     /* the current frame, in the cframe or the thread state */
    size_t fr_previous, fr_code, fr_instr, fr_entry, fr_size;
    int entry_is_owner; /* owner == FRAME_OWNED_BY_CSTACK (3.12, 3.13) or is_entry */
    size_t co_filename, co_qualname, co_linetable, co_firstlineno, co_code, co_size;
    size_t ascii_size; /* sizeof(PyASCIIObject); the compact object is 16 more */
} layout;

/* CPython 3.11 (pyenv's 3.11.7 and Debian's 3.11.2 alike, Include/internal). */
static const layout v311 = {.rt_tstate = 576,
                            .ts_thread_id = 152,
                            .ts_cframe = 56,
                            .cf_frame = 8,
                            .fr_previous = 48,
                            .fr_code = 32,
                            .fr_instr = 56,
                            .fr_entry = 68,
                            .fr_size = 72,
                            .co_filename = 112,
                            .co_qualname = 128,
                            .co_linetable = 136,
                            .co_firstlineno = 72,
                            .co_code = 184,
                            .co_size = 144,
                            .ascii_size = 48};
/* CPython 3.12 (3.12.1). */
static const layout v312 = {.holder_in_interp = 1,
                            .rt_interp = 40,
                            .in_locked = 1056,
                            .in_holder = 1048,
                            .ts_thread_id = 136,
                            .ts_cframe = 56,
                            .cf_frame = 0,
                            .fr_previous = 8,
                            .fr_code = 0,
                            .fr_instr = 56,
                            .fr_entry = 70,
                            .fr_size = 72,
                            .entry_is_owner = 1,
                            .co_filename = 112,
                            .co_qualname = 128,
                            .co_linetable = 136,
                            .co_firstlineno = 68,
                            .co_code = 192,
                            .co_size = 144,
                            .ascii_size = 40};

/* CPython 3.13's _Py_DebugOffsets, the first field of _PyRuntime (Include/internal/
   pycore_runtime.h): the words this file uses, by their index. */
enum {
    DO_VERSION = 1,
    DO_FREE_THREADED = 2,
    DO_INTERPRETERS_HEAD = 5,
    DO_GIL_LOCKED = 17,
    DO_GIL_HOLDER = 18,
    DO_TS_CURRENT_FRAME = 23,
    DO_TS_THREAD_ID = 24,
    DO_FR_PREVIOUS = 29,
    DO_FR_EXECUTABLE = 30,
    DO_FR_INSTR_PTR = 31,
    DO_FR_OWNER = 33,
    DO_CO_FILENAME = 35,
    DO_CO_QUALNAME = 37,
    DO_CO_LINETABLE = 38,
    DO_CO_FIRSTLINENO = 39,
    DO_CO_CODE_ADAPTIVE = 43,
    DO_UNICODE_ASCII_SIZE = 70
};

typedef struct code_entry {
    uintptr_t code, linetable;
    int firstlineno;
    char *names; /* qualname, NUL, file, NUL */
} code_entry;

typedef struct site {
    uintptr_t code, linetable;
    int64_t lasti;
    uintptr_t addr;
} site;

/* A frame as the thread's last reads found it, with its code's location table (as a site:
   a code object freed and another made at its address, for a frame at the same place, is
   not taken for it). */
typedef struct near_frame {
    uintptr_t frame, code, instr, linetable, addr;
} near_frame;

/* A thread's: its frames as last read and its sites, and room for what a read finds, off
   the stack (which may be a small sigaltstack). */
typedef struct py_thread {
    uintptr_t pages[MINE]; /* pages found readable, by this thread's last reads */
    near_frame near[NEAR];
    site sites[SITES];
    uintptr_t frames[FRAMES_MAX];
    char names[2 * NAME_BYTES];
} py_thread;

static struct {
    int on;
    unsigned minor; /* 11, 12: py.l is v311, v312 */
    layout l;
    uintptr_t runtime, code_type, eval_lo, eval_hi;
    _Atomic uintptr_t home_lo, home_hi; /* the evaluation loop's module, once seen */
    code_entry *codes;
    _Atomic uint32_t ncodes;
    _Atomic uint32_t *index; /* code object (hashed) -> code id + 1 */
    churn_spinlock lock;
    char *names_at, *names_end; /* the free part of the names' chunk */
    _Atomic uintptr_t pages[PAGES]; /* pages found readable */
    /* the writer's: per code id, the last segment with its CODE record (0: none) */
    uint32_t *named_in;
} py;

static inline uint64_t mix(uint64_t x)
{
    return x * 0x9e3779b97f4a7c15ull;
}

static __attribute__((noinline)) int page_found_readable(uintptr_t page, unsigned slot)
{
    char byte;
    if (churn_os_read_own(&byte, (const void *)page, 1) != 1)
        return 0;
    atomic_store_explicit(&py.pages[slot], page, memory_order_relaxed);
    return 1;
}

static inline int page_readable(uintptr_t page)
{
    unsigned slot = (unsigned)(mix(page >> 12) >> 52) & (PAGES - 1);
    if (CHURN_LIKELY(atomic_load_explicit(&py.pages[slot], memory_order_relaxed) == page))
        return 1;
    return page_found_readable(page, slot);
}

/* Whether the n bytes at src (n at most a page) are all on pages found readable. */
static inline int readable(uintptr_t src, size_t n)
{
    if (src < 4096 || src >= (1ull << 47) - n)
        return 0;
    uintptr_t first = src & ~(uintptr_t)4095, last = (src + n - 1) & ~(uintptr_t)4095;
    return page_readable(first) && (last == first || page_readable(last));
}

/* Copies n bytes at src (n at most a page) if every page of them is readable. */
static int peek(void *dst, uintptr_t src, size_t n)
{
    if (!readable(src, n))
        return 0;
    memcpy(dst, (const void *)src, n);
    return 1;
}

/* readable(), asked of the thread's own few pages first: a read's pages (its thread state,
   the evaluation loop's C frame, the frames' chunk) are the same from one read to the next,
   and a line of the thread's own stays in the cache where the shared table's slots do not.
   Both pages of a frame across a page's end are kept.  With 8 slots, python3's reads went to
   the shared table's probe about five times a read. */
static inline __attribute__((always_inline)) int readable_by(py_thread *t, uintptr_t src,
                                                             size_t n)
{
    uintptr_t first = src & ~(uintptr_t)4095, last = (src + n - 1) & ~(uintptr_t)4095;
    uintptr_t *a = &t->pages[(first >> 12) & (MINE - 1)],
              *b = &t->pages[(last >> 12) & (MINE - 1)];
    /* a slot starts at 0, which no address is taken from */
    if (CHURN_LIKELY(*a == first && *b == last && first))
        return 1;
    if (!readable(src, n))
        return 0;
    *a = first;
    *b = last;
    return 1;
}

/* readable_by() for an aligned word, which is on one page: the current frame's few words
   take a read's most checks. */
static inline __attribute__((always_inline)) int word_by(py_thread *t, uintptr_t src,
                                                         uintptr_t *v)
{
    uintptr_t page = src & ~(uintptr_t)4095;
    if (CHURN_UNLIKELY(t->pages[(page >> 12) & (MINE - 1)] != page || !page || (src & 7)) &&
        !readable_by(t, src, sizeof *v))
        return 0;
    memcpy(v, (const void *)src, sizeof *v);
    return 1;
}

static uintptr_t word_at(const unsigned char *b, size_t at)
{
    uintptr_t v;
    memcpy(&v, b + at, sizeof v);
    return v;
}

/* A str as UTF-8 into out (at most cap - 1 bytes, NUL-terminated); its length, 0 when it is
   not a compact str. */
static size_t read_str(uintptr_t s, char *out, size_t cap)
{
    unsigned char head[48];
    if (!peek(head, s, 40))
        return 0;
    uint32_t state;
    memcpy(&state, head + 32, sizeof state);
    uintptr_t length = word_at(head, 16);
    unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (!compact || (kind != 1 && kind != 2 && kind != 4))
        return 0;
    uintptr_t data = s + py.l.ascii_size + (ascii ? 0 : 16);
    size_t len = 0, have = 0, used = 0;
    unsigned char chunk[64];
    for (uintptr_t i = 0; i < length && len + 5 < cap; i++, used += kind) {
        if (used == have) {
            uintptr_t left = (length - i) * kind;
            have = left < sizeof chunk ? (size_t)left : sizeof chunk;
            if (!peek(chunk, data + i * kind, have))
                break;
            used = 0;
        }
        const unsigned char *b = chunk + used;
        uint32_t c = kind == 1   ? b[0]
                     : kind == 2 ? (uint32_t)b[0] | (uint32_t)b[1] << 8
                                 : (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                                       (uint32_t)b[3] << 24;
        if (c < 0x80) {
            out[len++] = (char)c;
        } else if (c < 0x800) {
            out[len++] = (char)(0xc0 | c >> 6);
            out[len++] = (char)(0x80 | (c & 63));
        } else if (c < 0x10000) {
            out[len++] = (char)(0xe0 | c >> 12);
            out[len++] = (char)(0x80 | ((c >> 6) & 63));
            out[len++] = (char)(0x80 | (c & 63));
        } else {
            out[len++] = (char)(0xf0 | ((c >> 18) & 7));
            out[len++] = (char)(0x80 | ((c >> 12) & 63));
            out[len++] = (char)(0x80 | ((c >> 6) & 63));
            out[len++] = (char)(0x80 | (c & 63));
        }
    }
    out[len] = '\0';
    return len;
}

/* Whether the n bytes at src are all on pages found readable (n of any size). */
static int readable_span(uintptr_t src, size_t n)
{
    if (!n || !readable(src, 1) || !readable(src + n - 1, 1))
        return 0;
    for (uintptr_t page = (src & ~(uintptr_t)4095) + 4096; page < src + n - 1; page += 4096)
        if (!page_readable(page))
            return 0;
    return 1;
}

/* The line of the code unit at lasti by the location table (3.11 and later,
   Objects/locations.md): entries of one byte (bit 7 set, the kind in bits 3-6, the code
   units it covers less one in bits 0-2), then the kind's bytes, which have bit 7 clear: one
   column byte (kinds 0-9), two (10-12), a signed varint of the line's change (13), that and
   three varints (14), none (15).  The table is read in place once its pages are known
   readable: a copy of it a byte at a time cost a new site ten thousand instructions.  -1: no
   line. */
static int64_t line_of(uintptr_t linetable, int firstlineno, int64_t lasti)
{
    unsigned char head[32];
    if (lasti < 0 || !peek(head, linetable, sizeof head))
        return firstlineno;
    size_t size = word_at(head, 16);
    if (size > (1u << 24) || !readable_span(linetable + 32, size))
        return -1;
    const unsigned char *b = (const unsigned char *)(linetable + 32);
    int64_t line = firstlineno, unit = 0;
    for (size_t i = 0; i < size;) {
        unsigned first = b[i++], kind = (first >> 3) & 15;
        unit += (first & 7) + 1;
        if (kind < 10) {
            i++;
        } else if (kind <= 12) {
            line += kind - 10;
            i += 2;
        } else if (kind <= 14) {
            uint64_t v = 0;
            for (unsigned shift = 0; i < size && shift <= 30; shift += 6) {
                v |= (uint64_t)(b[i] & 63) << shift;
                if (!(b[i++] & 64))
                    break;
            }
            line += v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
            while (kind == 14 && i < size && !(b[i] & 128))
                i++;
        }
        if (unit > lasti)
            return kind == 15 ? -1 : line;
    }
    return -1;
}

/* Room for a code object's names (under py.lock): chunks of NAMES_CHUNK bytes, as one
   mapping a name would make thousands of them (churn_mem_alloc maps each block). */
static char *names_room(size_t len)
{
    if ((size_t)(py.names_end - py.names_at) < len) {
        char *chunk = churn_os_map(NAMES_CHUNK);
        if (!chunk)
            return NULL;
        py.names_at = chunk;
        py.names_end = chunk + NAMES_CHUNK;
    }
    char *at = py.names_at;
    py.names_at += len;
    return at;
}

/* The code id of the code object whose header is head, entered at first sight; -1: none. */
static int64_t code_id(py_thread *t, uintptr_t code, const unsigned char *head)
{
    uintptr_t linetable = word_at(head, py.l.co_linetable);
    int firstlineno;
    memcpy(&firstlineno, head + py.l.co_firstlineno, sizeof firstlineno);
    unsigned slot = (unsigned)(mix(code) >> 40) & (INDEX_SLOTS - 1);
    for (unsigned probes = 0; probes < INDEX_SLOTS; probes++) {
        uint32_t id = atomic_load_explicit(&py.index[slot], memory_order_acquire);
        if (!id)
            break;
        const code_entry *e = &py.codes[id - 1];
        if (e->code == code && e->linetable == linetable && e->firstlineno == firstlineno)
            return id - 1;
        if (e->code == code)
            break; /* another code object at the same address: named anew */
        slot = (slot + 1) & (INDEX_SLOTS - 1);
    }
    char *names = t->names;
    size_t q = read_str(word_at(head, py.l.co_qualname), names, NAME_BYTES);
    size_t f = read_str(word_at(head, py.l.co_filename), names + q + 1, NAME_BYTES);
    if (!q || !f)
        return -1;
    churn_spin_lock(&py.lock);
    uint32_t n = atomic_load_explicit(&py.ncodes, memory_order_relaxed);
    int64_t got = -1;
    char *copy = n < CODES_MAX ? names_room(q + f + 2) : NULL;
    if (copy) {
        memcpy(copy, names, q + f + 2);
        py.codes[n] = (code_entry){code, linetable, firstlineno, copy};
        slot = (unsigned)(mix(code) >> 40) & (INDEX_SLOTS - 1);
        for (;;) {
            uint32_t id = atomic_load_explicit(&py.index[slot], memory_order_relaxed);
            if (!id || py.codes[id - 1].code == code)
                break;
            slot = (slot + 1) & (INDEX_SLOTS - 1);
        }
        atomic_store_explicit(&py.ncodes, n + 1, memory_order_relaxed);
        atomic_store_explicit(&py.index[slot], n + 1, memory_order_release);
        got = n;
    }
    churn_spin_unlock(&py.lock);
    return got;
}

/* The word at byte `at` of a struct at base whose bytes were found readable. */
static inline uintptr_t field(uintptr_t base, size_t at)
{
    uintptr_t v;
    memcpy(&v, (const void *)(base + at), sizeof v);
    return v;
}

/* A site not in the thread's table: its code id (the code object named at first sight) and
   line, into the set's first way, the one there before into its second.  Apart from the hot
   path, with the code's header on its frame. */
static __attribute__((noinline)) uintptr_t site_fill(py_thread *t, site *set, uintptr_t code,
                                                      uintptr_t linetable, int64_t lasti)
{
    unsigned char head[200];
    if (!peek(head, code, py.l.co_size))
        return 0;
    int64_t id = code_id(t, code, head);
    if (id < 0)
        return 0;
    int64_t line = line_of(linetable, py.codes[id].firstlineno, lasti);
    if (line < 0 || line > LINE_MAX_)
        line = 0;
    set[1] = set[0];
    set[0] = (site){code, linetable, lasti,
                    CHURN_PY_BASE | (uintptr_t)id << ID_SHIFT | (uintptr_t)line << 1 | 1};
    return set[0].addr;
}

/* The address standing for a frame of code (its header readable) at lasti; 0: none.  A
   site this thread has seen costs a probe of its own table: the code object and its
   location table are the ones it was named by, so its line is too.  Two ways a set: a
   loop's two sites that share a set, each found again by reading the location table from
   its start, cost python3 a tenth of its frame reads. */
static inline uintptr_t frame_addr(py_thread *t, uintptr_t code, uintptr_t linetable,
                                   int64_t lasti)
{
    site *set = &t->sites[((mix(code ^ (uintptr_t)lasti * 0x10001) >> 54) & (SITES / 2 - 1)) * 2];
    for (unsigned w = 0; w < 2; w++)
        if (CHURN_LIKELY(set[w].code == code && set[w].lasti == lasti &&
                         set[w].linetable == linetable))
            return set[w].addr;
    return site_fill(t, set, code, linetable, lasti);
}

/* The calling thread's current frame when it holds the GIL, else 0. */
static inline __attribute__((always_inline)) uintptr_t current_frame(py_thread *t,
                                                                     const layout *l)
{
    uintptr_t tstate = 0, interp, v;
    if (l->holder_in_interp) {
        uint32_t locked;
        if (!word_by(t, py.runtime + l->rt_interp, &interp) ||
            !readable_by(t, interp + l->in_locked, sizeof locked))
            return 0;
        memcpy(&locked, (const void *)(interp + l->in_locked), sizeof locked);
        if (locked != 1 || !word_by(t, interp + l->in_holder, &tstate))
            return 0;
    } else if (!word_by(t, py.runtime + l->rt_tstate, &tstate)) {
        return 0;
    }
    if (!tstate)
        return 0;
    /* the thread state's two words, by one check */
    size_t id = l->ts_thread_id, cf = l->ts_cframe != NONE_LEFT ? l->ts_cframe : l->cf_frame;
    size_t lo = id < cf ? id : cf, hi = (id < cf ? cf : id) + sizeof v;
    if (!readable_by(t, tstate + lo, hi - lo) || field(tstate, id) != (uintptr_t)pthread_self())
        return 0;
    if (l->ts_cframe == NONE_LEFT)
        return field(tstate, cf);
    return word_by(t, field(tstate, cf) + l->cf_frame, &v) ? v : 0;
}

/* A frame the near frames' table does not name: its site's address, entered there; 0 when
   its code is not a code object.  Apart from the hot path, which keeps its registers. */
static __attribute__((noinline)) uintptr_t
frame_miss(py_thread *t, near_frame *nf, uintptr_t frame, uintptr_t code, uintptr_t instr)
{
    const layout *l = &py.l;
    if (!readable(code, l->co_size) || field(code, 8) != py.code_type)
        return 0;
    int64_t lasti = ((int64_t)instr - (int64_t)(code + l->co_code)) / 2;
    uintptr_t linetable = field(code, l->co_linetable);
    uintptr_t a = frame_addr(t, code, linetable, lasti);
    if (a)
        *nf = (near_frame){frame, code, instr, linetable, a};
    return a;
}

/* The read for one layout: inlined once for each version whose offsets are constants.  From
   py.l they were loaded again on every frame (a store to out or to the near frames could
   alias them) or held in registers the loop then spilled. */
static inline __attribute__((always_inline)) unsigned read_chain(py_thread *t, const layout *l,
                                                                 uint64_t *hash)
{
    uintptr_t *out = t->frames;
    const unsigned max = FRAMES_MAX;
    const size_t fr_size = l->fr_size;
    unsigned n = 0;
    int open = 0; /* a frame was put since the last end of an evaluation's frames */
    /* The frames' hash, a step as each is found: the stack table's, outermost first, would
       take a second pass */
    uint64_t h = 0;
    /* A page found readable, that of the last frame checked: the frames of one chunk of the
       thread's data stack share pages, and a frame wholly on this one needs no other check.
       It starts as the page of t, which no frame is on. */
    uintptr_t page = (uintptr_t)t & ~(uintptr_t)4095;
    uintptr_t frame = current_frame(t, l);
    /* Each frame's fields and its code's type are read in place once their pages are known
       readable: copying the frame and the code's header (216 bytes) cost python3 as much as
       the rest of the read. */
    for (unsigned hops = 0; frame && hops < 4 * max && n + 1 < max; hops++) {
        if (frame - page > 4096 - fr_size) {
            if (!readable_by(t, frame, fr_size))
                break;
            page = frame & ~(uintptr_t)4095;
        }
        uintptr_t code = field(frame, l->fr_code), instr = field(frame, l->fr_instr);
        unsigned char owner = *(const unsigned char *)(frame + l->fr_entry);
        int entry = l->entry_is_owner ? owner == 3 : owner != 0;
        /* The frames outside the innermost few are where the last read found them, on the
           same instruction of the same code: a probe of a table small enough to stay in the
           cache names them (the sites' table is not).  The code's pages were found readable
           when the entry was made. */
        near_frame *nf = &t->near[(mix(frame ^ instr << 16) >> 54) & (NEAR - 1)];
        uintptr_t a = 0;
        if (CHURN_LIKELY(nf->frame == frame && nf->code == code && nf->instr == instr &&
                         nf->linetable == field(code, l->co_linetable))) {
            a = nf->addr;
        } else if (!(l->entry_is_owner && entry)) {
            a = frame_miss(t, nf, frame, code, instr);
        }
        if (a) {
            out[n++] = a;
            h = (h ^ a) * HASH_STEP;
            open = 1;
        }
        if (entry && open) {
            out[n++] = 0; /* the end of one evaluation's frames */
            h = (h ^ 1) * HASH_STEP;
            open = 0;
        }
        frame = field(frame, l->fr_previous);
    }
    *hash = h ^ (h >> 29) ^ n;
    return n;
}

/* noinline, as merge: under LTO its buffers would widen stack_id's frame on every stack,
   a 2 KiB coroutine's included (t_coroutine_stacks.sh), Python or not. */
__attribute__((noinline)) unsigned churn_pyframes_read(void **cache, const uintptr_t **frames,
                                                       uint64_t *hash)
{
    if (!py.on || (uintptr_t)__builtin_frame_address(0) - churn_stack_lo < STACK_ROOM)
        return 0;
    py_thread *t = *cache;
    if (!t) {
        t = churn_mem_alloc(sizeof *t); /* zeroed */
        if (!t)
            return 0;
        *cache = t;
    }
    *frames = t->frames;
    if (py.minor == 11)
        return read_chain(t, &v311, hash);
    if (py.minor == 12)
        return read_chain(t, &v312, hash);
    return read_chain(t, &py.l, hash);
}

static int in_eval(uintptr_t ip)
{
    return ip - 1 - py.eval_lo < py.eval_hi - py.eval_lo;
}

/* CPython's perf trampoline (-X perf, PYTHONPERFSUPPORT): code in no module that calls the
   evaluation loop for one Python function, which the frame chain names with its line. */
static int trampoline(uintptr_t ip)
{
    /* The evaluation loop's caller is nearly always code of the loop's own module: that one
       is known without a search of every module's extent. */
    uintptr_t lo = atomic_load_explicit(&py.home_lo, memory_order_acquire);
    if (lo && ip - 1 - lo < atomic_load_explicit(&py.home_hi, memory_order_relaxed) - lo)
        return 0;
    for (size_t i = 0; i < churn_modules_count(); i++) {
        const churn_module *m = churn_module_get(i);
        if (m && ip - 1 - m->start < m->end - m->start) {
            if (py.eval_lo - m->start < m->end - m->start) {
                /* hi first: a reader that sees lo sees its hi */
                atomic_store_explicit(&py.home_hi, m->end, memory_order_relaxed);
                atomic_store_explicit(&py.home_lo, m->start, memory_order_release);
            }
            return 0;
        }
    }
    return 1;
}

/* n frames from src to ips[at..], as far as max; memmove: a native part moves outward over
   itself. */
static inline void place(uintptr_t *ips, unsigned at, unsigned max, const uintptr_t *src,
                         unsigned n)
{
    if (at < max)
        memmove(ips + at, src, (n < max - at ? n : max - at) * sizeof *ips);
}

__attribute__((noinline)) unsigned churn_pyframes_merge(uintptr_t *ips, unsigned depth,
                                                        unsigned max, const uintptr_t *pyf,
                                                        unsigned npy)
{
    /* the frames one evaluation runs go after its native frame of the evaluation loop, the
       innermost group after the innermost such frame, and so on outward */
    unsigned start[64], len[64], groups = 0, at = 0;
    for (unsigned i = 0; i <= npy && groups < 64; i++)
        if (i == npy || !pyf[i]) {
            if (i > at) {
                start[groups] = at;
                len[groups++] = i - at;
            }
            at = i + 1;
        }
    /* the evaluation loop's frames that take a group, and whether the native frame outward
       of each is a perf trampoline, which its group names instead */
    unsigned pos[64], evals = 0, total = depth;
    uint64_t skipped = 0;
    for (unsigned i = 0; i < depth && evals < groups; i++)
        if (in_eval(ips[i])) {
            pos[evals] = i;
            total += len[evals];
            if (i + 1 < depth && trampoline(ips[i + 1])) {
                skipped |= 1ull << evals;
                total--;
            }
            evals++;
        }
    /* the parts in turn from the outermost, each moved outward before what lies inward of
       it is written */
    unsigned w = total, hi = depth;
    for (unsigned e = evals; e-- > 0;) {
        unsigned lo = pos[e] + 1 + (unsigned)(skipped >> e & 1);
        w -= hi - lo;
        place(ips, w, max, ips + lo, hi - lo);
        w -= len[e];
        place(ips, w, max, pyf + start[e], len[e]);
        hi = pos[e] + 1;
    }
    return total < max ? total : max;
}

int churn_pyframes_on(void)
{
    return py.on;
}

static int layout_313(const uint64_t *d)
{
    if (d[DO_FREE_THREADED] || (d[DO_VERSION] >> 16) != 0x030d)
        return 0;
    layout l = {.holder_in_interp = 1,
                .rt_interp = d[DO_INTERPRETERS_HEAD],
                .in_locked = d[DO_GIL_LOCKED],
                .in_holder = d[DO_GIL_HOLDER],
                .ts_thread_id = d[DO_TS_THREAD_ID],
                .ts_cframe = NONE_LEFT,
                .cf_frame = d[DO_TS_CURRENT_FRAME],
                .fr_previous = d[DO_FR_PREVIOUS],
                .fr_code = d[DO_FR_EXECUTABLE],
                .fr_instr = d[DO_FR_INSTR_PTR],
                .fr_entry = d[DO_FR_OWNER],
                .entry_is_owner = 1,
                .co_filename = d[DO_CO_FILENAME],
                .co_qualname = d[DO_CO_QUALNAME],
                .co_linetable = d[DO_CO_LINETABLE],
                .co_firstlineno = d[DO_CO_FIRSTLINENO],
                .co_code = d[DO_CO_CODE_ADAPTIVE],
                .ascii_size = d[DO_UNICODE_ASCII_SIZE]};
    size_t fr_end = l.fr_previous > l.fr_code ? l.fr_previous : l.fr_code;
    fr_end = (fr_end > l.fr_instr ? fr_end : l.fr_instr) + 8;
    l.fr_size = fr_end > l.fr_entry + 1 ? fr_end : l.fr_entry + 1;
    size_t co_end = l.co_filename > l.co_qualname ? l.co_filename : l.co_qualname;
    co_end = co_end > l.co_linetable ? co_end : l.co_linetable;
    l.co_size = co_end + 8;
    if (l.fr_size > 80 || l.co_size > 200 || l.co_firstlineno + 4 > l.co_size ||
        l.ascii_size > 48)
        return 0;
    py.l = l;
    return 1;
}

void churn_pyframes_init(void)
{
    if (py.on || !churn_opt.runtime_frames)
        return;
    const unsigned long *version = dlsym(RTLD_DEFAULT, "Py_Version");
    void *runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
    void *code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
    void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    if (!version || !runtime || !code_type || !eval)
        return; /* before 3.11, or no CPython */
    unsigned minor = (unsigned)(*version >> 16);
    if (minor == 0x030b) {
        py.l = v311;
        py.minor = 11;
    } else if (minor == 0x030c) {
        py.l = v312;
        py.minor = 12;
    } else if (minor != 0x030d || memcmp(runtime, "xdebugpy", 8) ||
               !layout_313((const uint64_t *)runtime)) {
        churn_log("CPython %lu.%lu: its Python frames are not named (CPython 3.11 to 3.13 "
                  "are; 3.12 and later name functions by the perf map, docs/runtimes.md)",
                  *version >> 24, (*version >> 16) & 255);
        return;
    }
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size)
        return;
    py.eval_lo = (uintptr_t)eval;
    py.eval_hi = (uintptr_t)eval + sym->st_size;
    py.runtime = (uintptr_t)runtime;
    py.code_type = (uintptr_t)code_type;
    if (!page_readable((uintptr_t)version & ~(uintptr_t)4095)) {
        churn_log("Python frames are not named: process_vm_readv cannot read this process "
                  "(or may not, under a seccomp filter libchurn did not see installed)");
        return;
    }
    py.codes = churn_os_map(CODES_MAX * sizeof *py.codes);
    py.index = churn_os_map(INDEX_SLOTS * sizeof *py.index);
    py.on = py.codes && py.index;
}

/* ---- the writer's side ---- */

/* A frame's code object is named once from one key segment to the next, by its id: every
   line's frame takes the name from there, and its line from its address. */
static void name_code(uintptr_t ip)
{
    uint32_t id = (uint32_t)((ip & ~CHURN_PY_BASE) >> ID_SHIFT);
    if (id >= atomic_load_explicit(&py.ncodes, memory_order_acquire))
        return;
    if (!py.named_in && !(py.named_in = churn_os_map(CODES_MAX * sizeof *py.named_in)))
        return;
    if (churn_enc_written(py.named_in[id]))
        return;
    char name[2 * NAME_BYTES + 2];
    const char *q = py.codes[id].names;
    size_t ql = strlen(q), fl = strlen(q + ql + 1);
    memcpy(name, q, ql);
    name[ql] = ':';
    memcpy(name + ql + 1, q + ql + 1, fl);
    if (churn_emit_py_code(id, name, ql + 1 + fl))
        py.named_in[id] = churn_enc.segments;
}

int churn_pyframes_name(uintptr_t ip)
{
    if ((ip & CHURN_PY_BASE) != CHURN_PY_BASE || !py.on)
        return 0;
    name_code(ip);
    return 1;
}
