/*
 * Allocators under their own names: a program (or a library it loads) that carries mimalloc,
 * a prefixed jemalloc, gperftools, rpmalloc, snmalloc or a Rust global allocator and calls it
 * by its own names (mi_malloc, je_mallocx, tc_new, rpmalloc, sn_malloc, __rust_alloc) goes
 * past every malloc libchurn sees.  At
 * start-up, after the way in is installed, every loaded object's symbol tables (.symtab and
 * .dynsym, from its file) are searched for those names, and each entry found is patched
 * (patch.c) to one of the relays below, which records it like the malloc family.
 *
 * A family in an object is a group: it is traced only when it has both an allocating and a
 * freeing entry and every one of its entries could be patched; otherwise its relays forward
 * untraced (one line on stderr says so), since a traced allocation with an untraced free is a
 * leak in the report.  Entries of one allocator call each other (mimalloc's malloc is an alias
 * of mi_malloc, its mi_calloc calls mi_heap_calloc, Rust's __rust_alloc calls malloc): the
 * outermost call records, the inner ones find the guard set and only forward.
 */
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "churn/own_libraries.h"
#include "walk/elfsyms.h"
#include "ways/patch.h"
#include "shim.h"
#include "ways/way.h"

/* mimalloc's heaps.  mi_heap_destroy frees every block of a heap at once, without a free of
   each, but only of a heap made destroyable (mi_heap_new, mi_heap_new_in_arena, or
   mi_heap_new_ex with allow_destroy); of another it is mi_heap_delete, which moves the
   blocks to the thread's backing heap and frees none.  So the relays of the heap makers
   remember which heaps are destroyable (R_HEAP_NEW; count: the allow_destroy argument, -1:
   always), mi_heap_delete forgets one (R_HEAP_DELETE), and mi_heap_destroy of a remembered
   heap has its blocks visited (mi_heap_visit_blocks) and records a free of each before the
   heap goes (R_HEAP_DESTROY).  A heap's own block (mimalloc's bookkeeping, made and freed
   inside these calls) is never recorded: the calls run guarded, so that whether mimalloc
   reaches its own entries for it (a shared library does, a unity build inlines them) changes
   nothing. */
enum role { R_ALLOC, R_POSIX, R_FREE, R_REALLOC, R_REALLOCF, R_HEAP_NEW, R_HEAP_DELETE,
            R_HEAP_DESTROY };

/* An entry point: its name after the family's prefix, what it does, and where its pointer,
   count and size arguments are (integer argument positions, -1 for none). */
typedef struct entry_def {
    const char *name;
    uint8_t role;
    int8_t ptr, count, size;
    uint8_t kind;
} entry_def;

#define ALLOC(n, s, k) {n, R_ALLOC, -1, -1, s, k}
#define ALLOCN(n, c, s, k) {n, R_ALLOC, -1, c, s, k}
#define FREE(n, k) {n, R_FREE, 0, -1, -1, k}
#define REALLOC(n, p, c, s) {n, R_REALLOC, p, c, s, 0}
#define END {NULL, 0, 0, 0, 0, 0}

enum { K_MALLOC = CHURN_ALLOC_MALLOC, K_CALLOC = CHURN_ALLOC_CALLOC,
       K_ALIGNED = CHURN_ALLOC_ALIGNED, K_NEW = CHURN_ALLOC_NEW,
       K_NEW_ARRAY = CHURN_ALLOC_NEW_ARRAY, K_FREE = CHURN_FREE_FREE,
       K_DELETE = CHURN_FREE_DELETE, K_DELETE_ARRAY = CHURN_FREE_DELETE_ARRAY };

/* mimalloc 2 (mimalloc.h).  mi_new* pair with mi_free, so they are recorded as malloc.
   mi_expand resizes in place or fails, which a realloc's record says either way. */
static const entry_def mimalloc_defs[] = {
    ALLOC("malloc", 0, K_MALLOC), ALLOC("zalloc", 0, K_CALLOC), ALLOC("malloc_small", 0, K_MALLOC),
    ALLOC("zalloc_small", 0, K_CALLOC), ALLOC("new", 0, K_MALLOC), ALLOC("new_nothrow", 0, K_MALLOC),
    ALLOC("malloc_aligned", 0, K_ALIGNED), ALLOC("malloc_aligned_at", 0, K_ALIGNED),
    ALLOC("zalloc_aligned", 0, K_ALIGNED), ALLOC("zalloc_aligned_at", 0, K_ALIGNED),
    ALLOC("new_aligned", 0, K_ALIGNED), ALLOC("new_aligned_nothrow", 0, K_ALIGNED),
    ALLOCN("calloc", 0, 1, K_CALLOC), ALLOCN("mallocn", 0, 1, K_MALLOC),
    ALLOCN("new_n", 0, 1, K_MALLOC), ALLOCN("calloc_aligned", 0, 1, K_ALIGNED),
    ALLOCN("calloc_aligned_at", 0, 1, K_ALIGNED),
    ALLOC("aligned_alloc", 1, K_ALIGNED), ALLOC("memalign", 1, K_ALIGNED),
    ALLOC("valloc", 0, K_ALIGNED),
    {"posix_memalign", R_POSIX, 0, -1, 2, K_ALIGNED},
    ALLOC("heap_malloc", 1, K_MALLOC), ALLOC("heap_zalloc", 1, K_CALLOC),
    ALLOC("heap_malloc_small", 1, K_MALLOC), ALLOC("heap_zalloc_small", 1, K_CALLOC),
    ALLOC("heap_malloc_aligned", 1, K_ALIGNED), ALLOC("heap_malloc_aligned_at", 1, K_ALIGNED),
    ALLOC("heap_zalloc_aligned", 1, K_ALIGNED), ALLOC("heap_zalloc_aligned_at", 1, K_ALIGNED),
    ALLOCN("heap_calloc", 1, 2, K_CALLOC), ALLOCN("heap_mallocn", 1, 2, K_MALLOC),
    ALLOCN("heap_calloc_aligned", 1, 2, K_ALIGNED), ALLOCN("heap_calloc_aligned_at", 1, 2, K_ALIGNED),
    FREE("free", K_FREE), FREE("cfree", K_FREE), FREE("free_size", K_FREE),
    FREE("free_aligned", K_FREE), FREE("free_size_aligned", K_FREE),
    REALLOC("realloc", 0, -1, 1), REALLOC("rezalloc", 0, -1, 1), REALLOC("new_realloc", 0, -1, 1),
    REALLOC("realloc_aligned", 0, -1, 1), REALLOC("realloc_aligned_at", 0, -1, 1),
    REALLOC("rezalloc_aligned", 0, -1, 1), REALLOC("rezalloc_aligned_at", 0, -1, 1),
    REALLOC("reallocn", 0, 1, 2), REALLOC("recalloc", 0, 1, 2), REALLOC("new_reallocn", 0, 1, 2),
    REALLOC("recalloc_aligned", 0, 1, 2), REALLOC("recalloc_aligned_at", 0, 1, 2),
    {"reallocf", R_REALLOCF, 0, -1, 1, 0},
    REALLOC("heap_realloc", 1, -1, 2), REALLOC("heap_rezalloc", 1, -1, 2),
    REALLOC("heap_realloc_aligned", 1, -1, 2), REALLOC("heap_realloc_aligned_at", 1, -1, 2),
    REALLOC("heap_rezalloc_aligned", 1, -1, 2), REALLOC("heap_rezalloc_aligned_at", 1, -1, 2),
    REALLOC("heap_reallocn", 1, 2, 3), REALLOC("heap_recalloc", 1, 2, 3),
    {"heap_reallocf", R_REALLOCF, 1, -1, 2, 0},
    REALLOC("expand", 0, -1, 1),
    {"heap_new", R_HEAP_NEW, -1, -1, -1, 0}, {"heap_new_in_arena", R_HEAP_NEW, -1, -1, -1, 0},
    {"heap_new_ex", R_HEAP_NEW, -1, 1, -1, 0}, {"heap_delete", R_HEAP_DELETE, 0, -1, -1, 0},
    {"heap_destroy", R_HEAP_DESTROY, 0, -1, -1, K_FREE},
    END,
};

/* jemalloc's non-standard API, under every prefix (none, when jemalloc is the malloc). */
#define JE_X ALLOC("mallocx", 0, K_MALLOC), REALLOC("rallocx", 0, -1, 1), FREE("dallocx", K_FREE), \
             FREE("sdallocx", K_FREE)
static const entry_def jemallocx_defs[] = {JE_X, END};
static const entry_def jemalloc_defs[] = {
    JE_X, ALLOC("malloc", 0, K_MALLOC), ALLOCN("calloc", 0, 1, K_CALLOC),
    ALLOC("memalign", 1, K_ALIGNED), ALLOC("aligned_alloc", 1, K_ALIGNED),
    ALLOC("valloc", 0, K_ALIGNED), {"posix_memalign", R_POSIX, 0, -1, 2, K_ALIGNED},
    FREE("free", K_FREE), REALLOC("realloc", 0, -1, 1), END,
};

static const entry_def gperftools_defs[] = {
    ALLOC("malloc", 0, K_MALLOC), ALLOC("malloc_skip_new_handler", 0, K_MALLOC),
    ALLOCN("calloc", 0, 1, K_CALLOC), ALLOC("memalign", 1, K_ALIGNED),
    ALLOC("valloc", 0, K_ALIGNED), {"posix_memalign", R_POSIX, 0, -1, 2, K_ALIGNED},
    FREE("free", K_FREE), FREE("cfree", K_FREE), FREE("free_sized", K_FREE),
    REALLOC("realloc", 0, -1, 1),
    ALLOC("new", 0, K_NEW), ALLOC("new_nothrow", 0, K_NEW), ALLOC("new_aligned", 0, K_NEW),
    ALLOC("new_aligned_nothrow", 0, K_NEW), ALLOC("newarray", 0, K_NEW_ARRAY),
    ALLOC("newarray_nothrow", 0, K_NEW_ARRAY), ALLOC("newarray_aligned", 0, K_NEW_ARRAY),
    ALLOC("newarray_aligned_nothrow", 0, K_NEW_ARRAY),
    FREE("delete", K_DELETE), FREE("delete_nothrow", K_DELETE), FREE("delete_sized", K_DELETE),
    FREE("delete_aligned", K_DELETE), FREE("delete_sized_aligned", K_DELETE),
    FREE("delete_aligned_nothrow", K_DELETE), FREE("deletearray", K_DELETE_ARRAY),
    FREE("deletearray_nothrow", K_DELETE_ARRAY), FREE("deletearray_sized", K_DELETE_ARRAY),
    FREE("deletearray_aligned", K_DELETE_ARRAY), FREE("deletearray_sized_aligned", K_DELETE_ARRAY),
    FREE("deletearray_aligned_nothrow", K_DELETE_ARRAY),
    END,
};

/* rpmalloc (rpmalloc.h): rpmalloc, rpfree, ... and its first-class heaps.  Its
   rpmalloc_heap_free_all frees a heap's blocks with no way to list them: an object that has
   it is not traced (family.refuse). */
static const entry_def rpmalloc_defs[] = {
    ALLOC("malloc", 0, K_MALLOC), ALLOCN("calloc", 0, 1, K_CALLOC),
    ALLOC("aligned_alloc", 1, K_ALIGNED), ALLOC("memalign", 1, K_ALIGNED),
    {"posix_memalign", R_POSIX, 0, -1, 2, K_ALIGNED}, ALLOCN("aligned_calloc", 1, 2, K_ALIGNED),
    FREE("free", K_FREE), REALLOC("realloc", 0, -1, 1), REALLOC("aligned_realloc", 0, -1, 2),
    ALLOC("malloc_heap_alloc", 1, K_MALLOC), ALLOC("malloc_heap_aligned_alloc", 2, K_ALIGNED),
    ALLOCN("malloc_heap_calloc", 1, 2, K_CALLOC),
    ALLOCN("malloc_heap_aligned_calloc", 2, 3, K_ALIGNED),
    REALLOC("malloc_heap_realloc", 1, -1, 2), REALLOC("malloc_heap_aligned_realloc", 1, -1, 3),
    {"malloc_heap_free", R_FREE, 1, -1, -1, K_FREE},
    END,
};

/* snmalloc's library build (SNMALLOC_STATIC_LIBRARY_PREFIX, sn_ by default): the C names,
   and the Rust ones (snmalloc-rs): alloc(align, size), dealloc(ptr, align, size),
   realloc(ptr, align, old size, new size). */
static const entry_def snmalloc_defs[] = {
    ALLOC("malloc", 0, K_MALLOC), ALLOCN("calloc", 0, 1, K_CALLOC),
    ALLOC("aligned_alloc", 1, K_ALIGNED), ALLOC("memalign", 1, K_ALIGNED),
    {"posix_memalign", R_POSIX, 0, -1, 2, K_ALIGNED}, FREE("free", K_FREE),
    REALLOC("realloc", 0, -1, 1), ALLOC("rust_alloc", 1, K_MALLOC),
    ALLOC("rust_alloc_zeroed", 1, K_CALLOC), FREE("rust_dealloc", K_FREE),
    REALLOC("rust_realloc", 0, -1, 3),
    END,
};

/* The shims every Rust program's allocations go through: alloc(size, align),
   dealloc(ptr, size, align), realloc(ptr, old size, align, new size). */
static const entry_def rust_defs[] = {
    ALLOC("__rust_alloc", 0, K_MALLOC), ALLOC("__rust_alloc_zeroed", 0, K_CALLOC),
    FREE("__rust_dealloc", K_FREE), REALLOC("__rust_realloc", 0, -1, 3), END,
};

typedef struct family {
    const char *allocator; /* as the report names it */
    const char *prefix;
    const entry_def *defs;
    const char *usable;    /* the usable-size function, under the prefix */
    const char *books;     /* the function its counters are read with, under the prefix */
    const char *visit;     /* the function that lists a heap's blocks (R_HEAP_DESTROY) */
    const char *refuse;    /* an entry whose frees cannot be known: its object is not traced */
} family;

enum { F_MIMALLOC, F_JE, F_RJEM, F_JEX, F_TC, F_RP, F_SN, F_RUST, NFAMILIES };
static const family families[NFAMILIES] = {
    [F_MIMALLOC] = {"mimalloc", "mi_", mimalloc_defs, "usable_size", "process_info",
                    "heap_visit_blocks"},
    [F_JE] = {"jemalloc", "je_", jemalloc_defs, "malloc_usable_size", "mallctl"},
    [F_RJEM] = {"jemalloc", "_rjem_", jemalloc_defs, "malloc_usable_size", "mallctl"},
    [F_JEX] = {"jemalloc", "", jemallocx_defs, "malloc_usable_size", NULL},
    [F_TC] = {"gperftools", "tc_", gperftools_defs, "malloc_size", NULL},
    [F_RP] = {"rpmalloc", "rp", rpmalloc_defs, "malloc_usable_size", NULL, NULL,
              "malloc_heap_free_all"},
    [F_SN] = {"snmalloc", "sn_", snmalloc_defs, "malloc_usable_size", NULL},
    [F_RUST] = {"Rust global allocator", "", rust_defs, NULL, NULL},
};

#define MAX_DEFS 72
#define MAX_GROUPS 32
#define MAX_SLOTS 200

typedef struct group {
    int family;
    _Atomic int on;
    char module[256];
    size_t (*usable)(void *);
    uintptr_t books;
    /* mi_heap_visit_blocks(heap, visit_all_blocks, visitor, arg) */
    int (*visit)(void *, int, int (*)(const void *, const void *, void *, size_t, void *), void *);
    unsigned patched;
} group;

typedef uintptr_t (*fn6)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);

typedef struct slot {
    group *g;
    const entry_def *def;
    fn6 original;
} slot;

static group groups[MAX_GROUPS];
static size_t ngroups;
static slot slots[MAX_SLOTS];
static size_t nslots;

static size_t usable_of(const group *g, void *p, size_t size)
{
    if (!churn_opt.events || !g->usable)
        return size;
    size_t u = g->usable(p);
    return u < size ? size : u;
}

/* Every relay passes the six integer argument registers on untouched: none of these entry
   points takes more, or a floating-point argument, and a callee ignores those it has no
   parameter for. */
/* The destroyable heaps alive: a slot is taken with a compare-and-swap and given back at the
   heap's delete or destroy.  A heap that finds no slot is never destroyed as remembered:
   its destroy is said once on stderr and leaves its blocks live in the trace. */
#define MAX_HEAPS 1024
static _Atomic uintptr_t heaps[MAX_HEAPS];

static void heap_remember(uintptr_t heap)
{
    for (size_t i = 0; heap && i < MAX_HEAPS; i++) {
        uintptr_t none = 0;
        if (atomic_compare_exchange_strong(&heaps[i], &none, heap))
            return;
    }
}

static int heap_forget(uintptr_t heap)
{
    for (size_t i = 0; heap && i < MAX_HEAPS; i++) {
        uintptr_t h = heap;
        if (atomic_compare_exchange_strong(&heaps[i], &h, 0))
            return 1;
    }
    return 0;
}

/* mi_heap_visit_blocks' visitor: called once per area (block NULL), then per block. */
static int destroyed_block(const void *heap, const void *area, void *block, size_t size, void *arg)
{
    (void)heap;
    (void)area;
    (void)size;
    (void)arg;
    if (block)
        churn_record_free(block, K_FREE);
    return 1;
}

static uintptr_t relay(unsigned i, uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3,
                       uintptr_t a4, uintptr_t a5)
{
    const slot *s = &slots[i];
    const entry_def *d = s->def;
    uintptr_t a[6] = {a0, a1, a2, a3, a4, a5};
    size_t size = d->size >= 0 ? a[d->size] : 0;
    if (!churn_tracing() || !atomic_load_explicit(&s->g->on, memory_order_relaxed) ||
        (d->count >= 0 && __builtin_mul_overflow(a[d->count], size, &size)))
        return s->original(a0, a1, a2, a3, a4, a5);
    CHURN_GUARD();
    switch (d->role) {
    case R_HEAP_NEW: {
        uintptr_t heap = s->original(a0, a1, a2, a3, a4, a5);
        if (d->count < 0 || (a[d->count] & 0xff))
            heap_remember(heap);
        return heap;
    }
    case R_HEAP_DELETE:
        heap_forget(a[d->ptr]);
        return s->original(a0, a1, a2, a3, a4, a5);
    case R_HEAP_DESTROY:
        if (heap_forget(a[d->ptr])) {
            s->g->visit((void *)a[d->ptr], 1, destroyed_block, NULL);
        } else if (a[d->ptr]) {
            static _Atomic int said;
            if (!atomic_exchange(&said, 1))
                churn_log("mi_heap_destroy of a heap not made while traced, in %s: if it was "
                          "destroyable its blocks stay live in the trace", s->g->module);
        }
        return s->original(a0, a1, a2, a3, a4, a5);
    default:
        break;
    }
    switch (d->role) {
    case R_ALLOC: {
        void *p = (void *)s->original(a0, a1, a2, a3, a4, a5);
        if (p)
            churn_record_alloc_usable(p, size, usable_of(s->g, p, size), d->kind);
        return (uintptr_t)p;
    }
    case R_POSIX: {
        uintptr_t rc = s->original(a0, a1, a2, a3, a4, a5);
        if (!(int)rc) {
            void *p = *(void **)a[d->ptr];
            churn_record_alloc_usable(p, size, usable_of(s->g, p, size), d->kind);
        }
        return rc;
    }
    case R_FREE:
        if (a[d->ptr])
            churn_record_free((void *)a[d->ptr], d->kind);
        return s->original(a0, a1, a2, a3, a4, a5);
    default: {
        void *p = (void *)a[d->ptr];
        churn_realloc_old o;
        if (!churn_realloc_begin(p, &o)) {
            void *q = (void *)s->original(a0, a1, a2, a3, a4, a5);
            if (!p && q)
                churn_record_alloc_usable(q, size, usable_of(s->g, q, size), CHURN_ALLOC_REALLOC);
            return (uintptr_t)q;
        }
        void *q = (void *)s->original(a0, a1, a2, a3, a4, a5);
        churn_realloc_end(p, &o, q, size, q ? usable_of(s->g, q, size) : 0,
                          d->role == R_REALLOCF);
        return (uintptr_t)q;
    }
    }
}

#define RELAY(r, c)                                                                       \
    static uintptr_t relay_##r##_##c(uintptr_t a0, uintptr_t a1, uintptr_t a2,           \
                                     uintptr_t a3, uintptr_t a4, uintptr_t a5)            \
    {                                                                                     \
        return relay(r * 10 + c, a0, a1, a2, a3, a4, a5);                                \
    }
#define ROW(X, r) X(r, 0) X(r, 1) X(r, 2) X(r, 3) X(r, 4) X(r, 5) X(r, 6) X(r, 7) X(r, 8) X(r, 9)
#define ROWS(X) ROW(X, 0) ROW(X, 1) ROW(X, 2) ROW(X, 3) ROW(X, 4) ROW(X, 5) ROW(X, 6)   \
    ROW(X, 7) ROW(X, 8) ROW(X, 9) ROW(X, 10) ROW(X, 11) ROW(X, 12) ROW(X, 13) ROW(X, 14)  \
    ROW(X, 15) ROW(X, 16) ROW(X, 17) ROW(X, 18) ROW(X, 19)
ROWS(RELAY)
#define RELAY_PTR(r, c) (void *)relay_##r##_##c,
static void *const relays[MAX_SLOTS] = {ROWS(RELAY_PTR)};

/* ---- finding the names ---- */

/* The name under Rust's v0 mangling ends in the identifier with its length, and an
   underscore when the identifier starts with one: ..7___rustc12___rust_alloc.  Compared from
   the end, last character first, without formatting the length: the names of a program with
   much Rust are many (workerd's rustls and friends), each compared with five identifiers at
   every start. */
static int rust_name(const char *sym, size_t len, const char *id)
{
    size_t idlen = strlen(id);
    if (sym[len - 1] != id[idlen - 1])
        return 0;
    if (len == idlen)
        return !memcmp(sym, id, len);
    if (sym[0] != '_' || sym[1] != 'R')
        return 0;
    char digits[20]; /* idlen's decimal digits, last first */
    size_t nd = 0;
    for (size_t v = idlen; nd == 0 || v; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    size_t n = nd + 1 + idlen; /* the tail: the length, '_', the identifier */
    if (n >= len)
        return 0;
    const char *t = sym + len - n;
    for (size_t k = 0; k < nd; k++)
        if (t[k] != digits[nd - 1 - k])
            return 0;
    return t[nd] == '_' && !memcmp(t + nd + 1, id, idlen) && sym[len - n - 1] >= 'A';
}

typedef struct found {
    uintptr_t addr[NFAMILIES][MAX_DEFS];
    uintptr_t usable[NFAMILIES], books[NFAMILIES], visit[NFAMILIES], refuse[NFAMILIES];
    int rust_custom; /* a #[global_allocator]: __rg_alloc is defined */
    churn_pymalloc_entries py;
} found;

static void take(found *f, int fam, const char *rest, uintptr_t addr)
{
    const family *F = &families[fam];
    for (size_t i = 0; F->defs[i].name; i++)
        if (!strcmp(rest, F->defs[i].name)) {
            if (!f->addr[fam][i])
                f->addr[fam][i] = addr;
            return;
        }
    if (F->usable && !strcmp(rest, F->usable) && !f->usable[fam])
        f->usable[fam] = addr;
    if (F->books && !strcmp(rest, F->books) && !f->books[fam])
        f->books[fam] = addr;
    if (F->visit && !strcmp(rest, F->visit) && !f->visit[fam])
        f->visit[fam] = addr;
    if (F->refuse && !strcmp(rest, F->refuse))
        f->refuse[fam] = addr;
}

/* CPython's allocator API (way_pymalloc.c), and PyConfig_InitPythonConfig for 3.8 or later */
static void python_name(churn_pymalloc_entries *py, const char *name, uintptr_t addr)
{
    static const struct {
        const char *name;
        size_t at;
    } names[] = {
        {"PyMem_GetAllocator", offsetof(churn_pymalloc_entries, get)},
        {"PyMem_SetAllocator", offsetof(churn_pymalloc_entries, set)},
        {"PyObject_GetArenaAllocator", offsetof(churn_pymalloc_entries, get_arenas)},
        {"PyObject_SetArenaAllocator", offsetof(churn_pymalloc_entries, set_arenas)},
        {"PyObject_Malloc", offsetof(churn_pymalloc_entries, object_malloc)},
        {"PyConfig_InitPythonConfig", offsetof(churn_pymalloc_entries, config)},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i].name))
            *(uintptr_t *)((char *)py + names[i].at) = addr;
}

static void on_symbol(const char *name, uintptr_t addr, void *ctx)
{
    found *f = ctx;
    switch (name[0]) {
    case 'm':
        if (name[1] == 'i' && name[2] == '_')
            take(f, F_MIMALLOC, name + 3, addr);
        else
            take(f, F_JEX, name, addr);
        break;
    case 'j':
        if (name[1] == 'e' && name[2] == '_')
            take(f, F_JE, name + 3, addr);
        break;
    case 't':
        if (name[1] == 'c' && name[2] == '_')
            take(f, F_TC, name + 3, addr);
        break;
    case 'r':
        if (name[1] == 'p')
            take(f, F_RP, name + 2, addr);
        else
            take(f, F_JEX, name, addr);
        break;
    case 's':
        if (name[1] == 'n' && name[2] == '_')
            take(f, F_SN, name + 3, addr);
        else
            take(f, F_JEX, name, addr);
        break;
    case 'd':
        take(f, F_JEX, name, addr);
        break;
    case 'P':
        python_name(&f->py, name, addr);
        break;
    case '_':
        if (!strncmp(name, "_rjem_", 6)) {
            take(f, F_RJEM, name + 6, addr);
            break;
        }
        /* Rust's names are __rust_* and __rg_alloc, or v0-mangled (_R...): a C library's
           thousands of other _-names (libpython's _Py*) are passed over without a compare. */
        if (!(name[1] == 'R' || (name[1] == '_' && name[2] == 'r')))
            break;
        size_t len = strlen(name);
        for (size_t i = 0; rust_defs[i].name; i++)
            if (rust_name(name, len, rust_defs[i].name) && !f->addr[F_RUST][i])
                f->addr[F_RUST][i] = addr;
        if (rust_name(name, len, "__rg_alloc"))
            f->rust_custom = 1;
        break;
    default:
        break;
    }
}

/* ---- patching ---- */

static int has_role(const found *f, int fam, int alloc)
{
    const entry_def *d = families[fam].defs;
    for (size_t i = 0; d[i].name; i++)
        if (f->addr[fam][i] &&
            (alloc ? d[i].role < R_FREE || d[i].role == R_REALLOC || d[i].role == R_REALLOCF
                   : d[i].role == R_FREE))
            return 1;
    return 0;
}

static void patch_group(const found *f, int fam, const char *module)
{
    const family *F = &families[fam];
    if (!has_role(f, fam, 1) || !has_role(f, fam, 0))
        return;
    size_t need = 0;
    for (size_t i = 0; F->defs[i].name; i++)
        need += f->addr[fam][i] && !churn_patch_done((void *)f->addr[fam][i]);
    if (!need)
        return; /* traced already, under the names a way in patched */
    if (f->refuse[fam]) {
        churn_log("%s in %s has %s%s, which frees blocks it does not name; not traced",
                  F->allocator, module, F->prefix, F->refuse);
        return;
    }
    for (size_t i = 0; F->defs[i].name; i++)
        if (F->defs[i].role == R_HEAP_DESTROY && f->addr[fam][i] && !f->visit[fam]) {
            churn_log("%s in %s has %s%s but no %s%s to say which blocks it frees; not traced",
                      F->allocator, module, F->prefix, F->defs[i].name, F->prefix, F->visit);
            return;
        }
    if (ngroups == MAX_GROUPS || nslots + need > MAX_SLOTS) {
        churn_log("%s in %s: too many allocators' entry points to patch; not traced",
                  F->allocator, module);
        return;
    }
    group *g = &groups[ngroups++];
    g->family = fam;
    snprintf(g->module, sizeof g->module, "%s", module);
    g->usable = (size_t (*)(void *))f->usable[fam];
    g->books = f->books[fam];
    g->visit = (int (*)(void *, int, int (*)(const void *, const void *, void *, size_t, void *),
                        void *))f->visit[fam];
    if (fam == F_RUST) {
        /* The default global allocator is the system's malloc, whichever libchurn forwards
           to; a #[global_allocator] has no usable size to ask. */
        g->usable = f->rust_custom ? NULL : churn_next.usable_size;
    }
    for (size_t i = 0; F->defs[i].name; i++) {
        uintptr_t at = f->addr[fam][i];
        if (!at)
            continue;
        /* An alias of an entry patched already (mimalloc's malloc is mi_malloc) */
        if (churn_patch_done((void *)at))
            continue;
        size_t j = 0;
        while (j < i && f->addr[fam][j] != at)
            j++;
        if (j < i)
            continue;
        slot *s = &slots[nslots];
        s->g = g;
        s->def = &F->defs[i];
        const char *why = NULL;
        if (churn_patch_redirect((void *)at, relays[nslots], (void **)&s->original, &why)) {
            churn_log("cannot patch %s%s in %s: %s; %s there is not traced", F->prefix,
                      F->defs[i].name, module, why, F->allocator);
            return;
        }
        nslots++;
        g->patched++;
    }
    atomic_store(&g->on, 1);
    churn_log("tracing %s in %s through the patch way in (%u entry points)", F->allocator,
              module, g->patched);
}

static uintptr_t self_bias = UINTPTR_MAX; /* libchurn's load address, skipped */

/* The C runtime's libraries: needing them says nothing of where a program's objects come
   from (a Rust program needs libgcc_s, which calls malloc for the unwinder's own use). */
static int runtime_library(const char *name)
{
    static const char *const runtime[] = {"libc.so", "libm.so", "libgcc_s.so", "libstdc++.so",
                                          "libpthread.so", "libdl.so", "librt.so", "ld-linux"};
    for (size_t i = 0; i < sizeof runtime / sizeof *runtime; i++)
        if (!strncmp(name, runtime[i], strlen(runtime[i])))
            return 1;
    return 0;
}

/* Objects searched for none of the names: the C runtime's libraries, which carry none of these
   allocators, and the libraries libchurn loads for itself (own_libraries.h).  Their symbol
   tables are among the largest loaded (libc's and libm's debug files, where libc6-dbg is
   installed): 1.7 of the 2.3 ms of the search in python3.11 -c pass. */
static int without_named_allocator(const char *path)
{
    const char *base = strrchr(path, '/');
    return runtime_library(base ? base + 1 : path) || churn_own_library(path);
}

static void scan_object(const char *path, uintptr_t bias, int exe, int late)
{
    static found f;
    memset(&f, 0, sizeof f);
    churn_file_symbols(exe ? "/proc/self/exe" : path, bias, on_symbol, &f);
    const char *module = exe ? "the executable" : path;
    for (int fam = 0; fam < NFAMILIES; fam++)
        patch_group(&f, fam, module);
    const churn_pymalloc_entries *py = &f.py;
    if (py->get && py->set && py->get_arenas && py->set_arenas && py->object_malloc &&
        py->config) {
        char where[256];
        if (exe) {
            ssize_t n = readlink("/proc/self/exe", where, sizeof where - 1);
            where[n > 0 ? n : 0] = 0;
        } else {
            snprintf(where, sizeof where, "%s", path);
        }
        churn_pymalloc_found(py, where, late);
    }
}

static int each_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    int *first = arg;
    const char *path = info->dlpi_name;
    int exe = *first;
    *first = 0;
    if (!exe && (!path || !*path))
        return 0; /* the vdso */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && churn_self_lo >= lo && churn_self_lo < lo + ph->p_memsz) {
            self_bias = info->dlpi_addr;
            return 0; /* libchurn itself */
        }
    }
    if (!exe && without_named_allocator(path))
        return 0;
    scan_object(path, info->dlpi_addr, exe, 0);
    return 0;
}

/* ---- libraries loaded later ---- */

/* The dynamic linker calls its empty _dl_debug_state (r_debug.r_brk, where debuggers put
   their breakpoint) when the objects it maps are consistent: in dlopen, after the new ones
   are mapped and before any is relocated or its constructors run, with the loader's lock
   held.  Nothing can call into them yet, so their entry points are patched there.  The
   objects seen are known by their link map, load address and dynamic section. */
#define MAX_SEEN 1024
static struct seen {
    const struct link_map *l;
    uintptr_t addr;
    const void *ld;
} seen[MAX_SEEN];
static size_t nseen;

static int was_seen(const struct link_map *l)
{
    for (size_t i = 0; i < nseen; i++)
        if (seen[i].l == l && seen[i].addr == l->l_addr && seen[i].ld == l->l_ld)
            return 1;
    return 0;
}

static void see(const struct link_map *l)
{
    if (nseen < MAX_SEEN)
        seen[nseen++] = (struct seen){l, l->l_addr, l->l_ld};
}

static void loader_changed(void)
{
    if (_r_debug.r_state != RT_CONSISTENT ||
        atomic_load_explicit(&churn_state, memory_order_relaxed) != CHURN_ON)
        return;
    int saved = churn_in_shim;
    churn_in_shim = 1;
    for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next) {
        if (was_seen(l))
            continue;
        see(l);
        if (l->l_name && *l->l_name && l->l_addr != self_bias && !strstr(l->l_name, "linux-vdso") &&
            !without_named_allocator(l->l_name))
            scan_object(l->l_name, l->l_addr, 0, 1);
    }
    churn_in_shim = saved;
}

static void watch_dlopen(void)
{
    for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next)
        see(l);
    const char *why = NULL;
    if (!_r_debug.r_brk || churn_patch_empty((void *)_r_debug.r_brk, loader_changed, &why))
        churn_log("libraries loaded by dlopen are not searched for allocators called by their "
                  "own names: %s", why ? why : "the dynamic linker has no r_debug breakpoint");
}

static const char *const allocating[] = {"malloc", "calloc", "realloc", "posix_memalign",
                                         "aligned_alloc", "memalign", "_Znwm", "_Znam"};

static int file_allocates(const char *path)
{
    for (size_t i = 0; i < sizeof allocating / sizeof *allocating; i++)
        if (churn_file_refers(path, allocating[i]))
            return 1;
    return 0;
}

typedef struct {
    const char *name;
    int allocates;
} needed_lib;

static int find_needed(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    needed_lib *n = arg;
    const char *path = info->dlpi_name, *base = path ? strrchr(path, '/') : NULL;
    if (base && !strcmp(base + 1, n->name)) {
        n->allocates = file_allocates(path);
        return 1;
    }
    return 0;
}

static void check_needed(const char *name, void *ctx)
{
    int *launcher = ctx;
    if (*launcher || runtime_library(name))
        return;
    needed_lib n = {name, 0};
    dl_iterate_phdr(find_needed, &n);
    *launcher = n.allocates;
}

/* Whether the executable can get memory for an allocator of its own: it imports a way to map
   or grow memory, or carries a static arena (writable segments of 1 MiB or more).  setarch
   and the like import none and allocate nothing. */
static int can_hold_memory(void)
{
    static const char *const ways[] = {"mmap", "mmap64", "mremap", "sbrk", "brk", "syscall"};
    for (size_t i = 0; i < sizeof ways / sizeof *ways; i++)
        if (churn_file_refers("/proc/self/exe", ways[i]))
            return 1;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
    size_t n = (size_t)getauxval(AT_PHNUM), writable = 0;
    for (size_t i = 0; ph && i < n; i++)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_W))
            writable += ph[i].p_memsz;
    return writable >= (1u << 20);
}

/* A stripped executable shows none of the names above.  When it does not call an allocating
   function of the malloc family through the PLT either, whatever allocator it carries is
   invisible: say so rather than trace it silently short.  Not when it needs a library (other
   than the C runtime's) that calls malloc: the program is then most likely a launcher of that
   library, whose allocations are traced (ruby3.1 is 549 bytes of code around libruby, jq's
   work is in libjq), nor when it has no way to hold memory of its own (can_hold_memory).
   (One that does call malloc may still carry an allocator of its own, but
   so does every stripped program with a private pool, such as python3's pymalloc: that is
   left to the blind-spot detector, which speaks only when memory grows untraced.) */
static void stripped_executable(void)
{
    if (churn_exe_has_symtab())
        return;
    for (size_t i = 0; i < ngroups; i++)
        if (atomic_load(&groups[i].on) && !strcmp(groups[i].module, "the executable"))
            return;
    if (file_allocates("/proc/self/exe") || !can_hold_memory())
        return;
    int launcher = 0;
    churn_exe_needed(check_needed, &launcher);
    if (!launcher)
        churn_log("the executable is stripped (no .symtab) and calls no malloc through the PLT: "
                  "libchurn cannot see the allocator it carries, and its allocations are not "
                  "traced (the blind-spot detector says so if its memory grows)");
}

void churn_named_install(void)
{
    int first = 1;
    dl_iterate_phdr(each_object, &first);
    stripped_executable();
    watch_dlopen();
}

/* ---- naming them, and their books ---- */

/* mimalloc's process figures are atomics it keeps anyway (and getrusage): cheap on any
   thread.  jemalloc's mallctl takes its locks, so it is asked only on the writer thread outside
   its lock (fresh), and the last figures stand in elsewhere (an epoch's end, the exit path). */
typedef void (*mi_process_info_fn)(size_t *, size_t *, size_t *, size_t *, size_t *, size_t *,
                                   size_t *, size_t *);
typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);

static mi_process_info_fn mi_info;
static mallctl_fn je_ctl;
static uint64_t je_last[4];

static const char *const mi_names[] = {"mi_process_info.current_commit",
                                       "mi_process_info.peak_commit",
                                       "mi_process_info.page_faults"};
static char je_names[4][48];
static const char *const je_stats[4] = {"stats.allocated", "stats.active", "stats.resident",
                                        "stats.mapped"};

static void books(uint64_t *values, int fresh)
{
    size_t k = 0;
    if (mi_info) {
        size_t elapsed, user, sys, rss, peak_rss, commit = 0, peak_commit = 0, faults = 0;
        mi_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
        values[k++] = commit;
        values[k++] = peak_commit;
        values[k++] = faults;
    }
    if (je_ctl) {
        if (fresh && churn_writer_is_self()) {
            uint64_t epoch = 1;
            size_t len = sizeof epoch;
            je_ctl("epoch", &epoch, &len, &epoch, len);
            for (size_t i = 0; i < 4; i++) {
                size_t v = 0;
                len = sizeof v;
                if (!je_ctl(je_stats[i], &v, &len, NULL, 0))
                    je_last[i] = v;
            }
        }
        for (size_t i = 0; i < 4; i++)
            values[k++] = je_last[i];
    }
}

void churn_named_describe(const char *way)
{
    static char ways[480];
    const churn_allocator_info *main = churn_allocator();
    size_t len = (size_t)snprintf(ways, sizeof ways, "%s via %s", main->name ? main->name : "?",
                                  way);
    /* Which object's malloc that way forwards to, when it is not the C library's. */
    Dl_info where;
    if (len < sizeof ways && churn_next.malloc && dladdr((void *)churn_next.malloc, &where) &&
        where.dli_fname && *where.dli_fname && !strstr(where.dli_fname, "/libc.so"))
        len += (size_t)snprintf(ways + len, sizeof ways - len, " (malloc of %s)", where.dli_fname);
    size_t plain = len;
    size_t nnames = 0;
    const char *names[CHURN_MAX_COUNTERS];
    for (size_t i = 0; i < ngroups; i++) {
        const group *g = &groups[i];
        if (!atomic_load(&g->on))
            continue;
        const family *F = &families[g->family];
        if (len < sizeof ways)
            len += (size_t)snprintf(ways + len, sizeof ways - len, "; %s in %s via patch",
                                    F->allocator, g->module);
        if (g->family == F_MIMALLOC && !mi_info && g->books) {
            mi_info = (mi_process_info_fn)g->books;
            for (size_t k = 0; k < 3; k++)
                names[nnames++] = mi_names[k];
        } else if ((g->family == F_JE || g->family == F_RJEM) && !je_ctl && g->books) {
            je_ctl = (mallctl_fn)g->books;
            for (size_t k = 0; k < 4; k++) {
                snprintf(je_names[k], sizeof je_names[k], "%smallctl.%s", F->prefix, je_stats[k]);
                names[nnames++] = je_names[k];
            }
        }
    }
    len = churn_pymalloc_describe(ways, len, sizeof ways);
    if (len > plain)
        churn_allocator_set_ways(ways);
    if (nnames && !churn_allocator_add_counters(names, nnames, books))
        churn_log("no room for the counters of %s in the trace", mi_info ? "mimalloc" : "jemalloc");
}
