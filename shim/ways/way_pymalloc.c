/*
 * CPython's pymalloc, traced through the interpreter's own allocator hooks.  Python's objects
 * (PyObject_Malloc) and most of its buffers (PyMem_Malloc) live in pymalloc's arenas, which it
 * maps itself: nothing of them reaches malloc.  Their entry points cannot be patched as the
 * named allocators' are: an optimised interpreter (Debian's python3.11, built with LTO and
 * profile feedback) copies PyObject_Malloc into its callers, pymalloc's code included, behind
 * a check that the domain's function is still pymalloc's own, so most allocations never
 * pass an entry.  Every copy reads the domain's table, though, which is what
 * PyMem_SetAllocator sets (the way tracemalloc hooks in): libchurn puts its functions there
 * for the PYMEM_DOMAIN_MEM and PYMEM_DOMAIN_OBJ domains, each calling the allocator that was
 * there under the guard and recording the block.  The raw domain is malloc, traced by the way
 * in.  The arena allocator (PyObject_SetArenaAllocator) is wrapped too: the arenas pymalloc
 * maps are its heap, counted (pymalloc.arena_bytes) and recorded (CHURN_MAP_ARENA, with the
 * size of their pools) for the RSS split, whose model of the allocator behind malloc does not
 * know pymalloc's pools.
 *
 * Only at start-up: every object is relocated, no Python code has run and no thread exists,
 * so the tables are set before anything is allocated through them.  Not in a libpython that
 * dlopen loads later (its code is not relocated yet when libchurn sees it), nor under
 * PYTHONMALLOC (Python sets its tables itself from it, before its first allocation) or
 * PYTHONMALLOCSTATS (its statistics are pymalloc's only while pymalloc's own functions are
 * in the table).  -X dev replaces the hooks too.  The blind-spot detector learns from the
 * first call of a hook that pymalloc is traced (churn_blind_runtime_traced); until then,
 * growth in pymalloc's arenas is said not to be traced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "churn/runtime_heaps.h"
#include "shim.h"
#include "ways/way.h"

/* PyMemAllocatorEx (CPython 3.5 and later). */
typedef struct py_allocator {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t size);
    void (*free)(void *ctx, void *ptr);
} py_allocator;

/* PyObjectArenaAllocator. */
typedef struct py_arenas {
    void *ctx;
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *ptr, size_t size);
} py_arenas;

enum { DOMAIN_MEM = 1, DOMAIN_OBJ = 2 };

static py_allocator below[3];
static py_arenas arenas_below;
static char module[256];
static int installed;
static _Atomic int called;
static _Atomic uint64_t arena_bytes;

static void first_call(void)
{
    if (CHURN_UNLIKELY(!atomic_load_explicit(&called, memory_order_relaxed))) {
        atomic_store(&called, 1);
        churn_blind_runtime_traced(CHURN_RUNTIME_CPYTHON);
    }
}

/* pymalloc serves 1..512 bytes from its pools in classes of 16 (CPython 3.8 and later, on
   64-bit); anything else, and a request it cannot serve, goes to PyMem_RawMalloc: malloc. */
static size_t usable(void *p, size_t size)
{
    if (!churn_opt.events)
        return size;
    if (size - 1 < 512)
        return (size + 15) & ~(size_t)15;
    size_t u = churn_next.usable_size ? churn_next.usable_size(p) : size;
    return u < size ? size : u;
}

static __attribute__((noinline)) void *hook_malloc_traced(py_allocator *n, size_t size)
{
    if (!churn_tracing())
        return n->malloc(n->ctx, size);
    first_call();
    CHURN_GUARD();
    void *p = n->malloc(n->ctx, size);
    if (p)
        churn_record_alloc_usable(p, size, usable(p, size), CHURN_ALLOC_MALLOC);
    return p;
}

/* Under CHURN_SAMPLE_BYTES an unsampled block's call is counted and goes no further, as
   interpose.c's fast path does (shim.h, churn_sample_*_room); the allocator's call still
   runs inside the hook's guard, since pymalloc hands what it does not serve to malloc (and
   asks malloc for its own tables when it maps an arena).  No guard is checked first:
   nothing of libchurn's calls Python's allocators, and pymalloc calls back only malloc.  The
   guard notes its frame: a stack overflow inside pymalloc's call, caught by a handler that
   jumps out, lets it go (guard.c).  An allocation is counted before its call, so that nothing
   but the guard's address is kept across it, and taken back if it fails.  A thread's first call, a new epoch and a sample
   go the traced way, which counts them. */
static void *hook_malloc(void *ctx, size_t size)
{
    py_allocator *n = ctx;
    if (churn_sample_epoch_outside() && churn_sample_alloc_counted(size)) {
        churn_guard_hold();
        void *p = n->malloc(n->ctx, size);
        churn_guard_let_go();
        if (CHURN_UNLIKELY(p == NULL))
            churn_sample_alloc_uncommit(size);
        return p;
    }
    return hook_malloc_traced(n, size);
}

static __attribute__((noinline)) void *hook_calloc_traced(py_allocator *n, size_t nelem,
                                                          size_t elsize)
{
    size_t size;
    if (!churn_tracing() || __builtin_mul_overflow(nelem, elsize, &size))
        return n->calloc(n->ctx, nelem, elsize);
    first_call();
    CHURN_GUARD();
    void *p = n->calloc(n->ctx, nelem, elsize);
    if (p)
        churn_record_alloc_usable(p, size, usable(p, size), CHURN_ALLOC_CALLOC);
    return p;
}

static void *hook_calloc(void *ctx, size_t nelem, size_t elsize)
{
    py_allocator *n = ctx;
    size_t size;
    if (!__builtin_mul_overflow(nelem, elsize, &size) && churn_sample_epoch_outside() &&
        churn_sample_alloc_counted(size)) {
        churn_guard_hold();
        void *p = n->calloc(n->ctx, nelem, elsize);
        churn_guard_let_go();
        if (CHURN_UNLIKELY(p == NULL))
            churn_sample_alloc_uncommit(size);
        return p;
    }
    return hook_calloc_traced(n, nelem, elsize);
}

/* A block pymalloc shrinks in place keeps its class; it is recorded with the new size's. */
static __attribute__((noinline)) void *hook_realloc_traced(py_allocator *n, void *ptr,
                                                           size_t size)
{
    if (!churn_tracing())
        return n->realloc(n->ctx, ptr, size);
    first_call();
    CHURN_GUARD();
    churn_realloc_old o;
    if (!churn_realloc_begin(ptr, &o)) {
        void *q = n->realloc(n->ctx, ptr, size);
        if (!ptr && q)
            churn_record_alloc_usable(q, size, usable(q, size), CHURN_ALLOC_REALLOC);
        return q;
    }
    void *q = n->realloc(n->ctx, ptr, size);
    churn_realloc_end(ptr, &o, q, size, q ? usable(q, size) : 0, 0);
    return q;
}

/* A sampled block's realloc records its free, and a realloc to 0 bytes frees ptr and may
   answer NULL: those are the traced way's. */
static void *hook_realloc(void *ctx, void *ptr, size_t size)
{
    py_allocator *n = ctx;
    if (churn_sample_realloc_room_outside(ptr, size)) {
        churn_guard_hold();
        void *q = n->realloc(n->ctx, ptr, size);
        churn_guard_let_go();
        if (CHURN_LIKELY(q != NULL)) /* else ptr is as it was */
            churn_sample_realloc_commit(ptr, size);
        return q;
    }
    return hook_realloc_traced(n, ptr, size);
}

/* The free goes to pymalloc under the guard too: a block it took from malloc goes back to
   free, which must not record it a second time. */
static __attribute__((noinline)) void hook_free_traced(py_allocator *n, void *ptr)
{
    if (!churn_tracing()) {
        n->free(n->ctx, ptr);
        return;
    }
    first_call();
    CHURN_GUARD();
    if (ptr)
        churn_record_free(ptr, CHURN_FREE_FREE);
    n->free(n->ctx, ptr);
}

static void hook_free(void *ctx, void *ptr)
{
    py_allocator *n = ctx;
    if (ptr && CHURN_LIKELY(churn_sample_free_quick_outside(ptr))) {
        churn_guard_hold();
        n->free(n->ctx, ptr);
        churn_guard_let_go();
        return;
    }
    hook_free_traced(n, ptr);
}

/* An arena holds 64 pools (CPython's ARENA_SIZE / POOL_SIZE: 256 KiB of 4 KiB in 3.8 and 3.9,
   1 MiB of 16 KiB from 3.10), each of blocks of one size class, aligned to its size. */
#define POOLS_PER_ARENA 64

static void record_arena(void *p, size_t size, uint64_t unit)
{
    if (atomic_load_explicit(&churn_state, memory_order_relaxed) == CHURN_ON &&
        !churn_writer_is_self())
        churn_record_map(CHURN_MAP_ARENA | CHURN_MAP_INTERNAL, p, size, unit, NULL);
}

/* The arena allocator is called by pymalloc, inside a hook and so under libchurn's guard, and
   by the interpreter's frame stack, outside any: what it maps under the guard is one of
   pymalloc's arenas, the rest are chunks of the frame stack.  pymalloc maps its arenas
   holding the GIL and no lock of another allocator: the records of the mapping may wait for
   room, as the blocks' records do. */
static void *arena_alloc(void *ctx, size_t size)
{
    py_arenas *n = ctx;
    if (!churn_in_shim)
        return n->alloc(n->ctx, size);
    churn_internal_may_wait = 1;
    void *p = n->alloc(n->ctx, size);
    if (p) {
        atomic_fetch_add_explicit(&arena_bytes, size, memory_order_relaxed);
        record_arena(p, size, size / POOLS_PER_ARENA);
    }
    churn_internal_may_wait = 0;
    return p;
}

static void arena_free(void *ctx, void *ptr, size_t size)
{
    py_arenas *n = ctx;
    if (!churn_in_shim || !ptr) {
        n->free(n->ctx, ptr, size);
        return;
    }
    churn_internal_may_wait = 1;
    record_arena(ptr, size, 0);
    n->free(n->ctx, ptr, size);
    atomic_fetch_sub_explicit(&arena_bytes, size, memory_order_relaxed);
    churn_internal_may_wait = 0;
}

static int set_in_environment(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

void churn_pymalloc_found(const churn_pymalloc_entries *e, const char *where, int late)
{
    if (!late)
        churn_pyframes_init();
    if (late || installed) {
        churn_log("CPython in %s, %s: its pymalloc is not traced (PYTHONMALLOC=malloc in the "
                  "environment sends Python's objects to malloc, traced)",
                  where, late ? "loaded by dlopen" : "a second interpreter in the process");
        return;
    }
    if (set_in_environment("PYTHONMALLOC") || set_in_environment("PYTHONMALLOCSTATS"))
        return;
    void (*get)(int, py_allocator *) = (void (*)(int, py_allocator *))e->get;
    void (*set)(int, py_allocator *) = (void (*)(int, py_allocator *))e->set;
    void (*get_arenas)(py_arenas *) = (void (*)(py_arenas *))e->get_arenas;
    void (*set_arenas)(py_arenas *) = (void (*)(py_arenas *))e->set_arenas;
    get_arenas(&arenas_below);
    py_arenas a = {&arenas_below, arena_alloc, arena_free};
    set_arenas(&a);
    for (int d = DOMAIN_MEM; d <= DOMAIN_OBJ; d++) {
        get(d, &below[d]);
        py_allocator hook = {&below[d], hook_malloc, hook_calloc, hook_realloc, hook_free};
        set(d, &hook);
    }
    snprintf(module, sizeof module, "%s", where);
    installed = 1;
}

static void counters(uint64_t *values, int fresh)
{
    (void)fresh; /* an atomic: always current */
    values[0] = atomic_load_explicit(&arena_bytes, memory_order_relaxed);
}

size_t churn_pymalloc_describe(char *ways, size_t len, size_t size)
{
    if (!installed)
        return len;
    static const char *const names[] = {"pymalloc.arena_bytes"};
    if (!churn_allocator_add_counters(names, 1, counters))
        churn_log("no room for the counters of CPython's pymalloc in the trace");
    if (len < size)
        len += (size_t)snprintf(ways + len, size - len,
                                "; CPython's pymalloc in %s via "
                                "PyMem_SetAllocator",
                                module);
    return len;
}
