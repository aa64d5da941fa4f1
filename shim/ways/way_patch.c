/*
 * The patch way in: the executable links its own allocator (jemalloc's static library, a
 * malloc of its own) and exports it, so every malloc call binds to the executable's copy and
 * libchurn's exported one is never called.  The executable's malloc family and C++ operators
 * are redirected at their entry (patch.c) to the replacements below, which call the original
 * through its trampoline under the guard and record exactly as interpose.c and cxx.c do.
 *
 * Every function of the family the executable defines must be patched, or none is traced: a
 * traced malloc with an untraced free would report every object as a leak.  A refusal leaves
 * the functions patched so far forwarding untraced (tracing never starts), which is harmless.
 */
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#include "walk/elfsyms.h"
#include "ways/patch.h"
#include "ways/cxx_ops.h"
#include "shim.h"
#include "ways/way.h"

/* The executable's own functions, through their trampolines. */
static struct {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    void *(*memalign)(size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
} exe;

static size_t page_size;

/* ---- C ---- */

static void *w_malloc(size_t size)
{
    if (!churn_tracing())
        return exe.malloc(size);
    CHURN_GUARD();
    void *p = exe.malloc(size);
    churn_record_alloc(p, size, CHURN_ALLOC_MALLOC);
    return p;
}

static void w_free(void *p)
{
    if (!p || !churn_tracing()) {
        exe.free(p);
        return;
    }
    CHURN_GUARD();
    churn_record_free(p, CHURN_FREE_FREE);
    exe.free(p);
}

static void *w_calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total) || !churn_tracing())
        return exe.calloc(n, size);
    CHURN_GUARD();
    void *p = exe.calloc(n, size);
    churn_record_alloc(p, total, CHURN_ALLOC_CALLOC);
    return p;
}

/* churn_record_realloc calls churn_next.realloc, which install() points at the executable's */
static void *w_realloc(void *p, size_t size)
{
    if (!churn_tracing())
        return exe.realloc(p, size);
    CHURN_GUARD();
    return churn_record_realloc(p, size);
}

static void *w_reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total) || !churn_tracing() || !exe.realloc)
        return exe.reallocarray(p, n, size);
    CHURN_GUARD();
    return churn_record_realloc(p, total);
}

static void *record_aligned(void *p, size_t size)
{
    churn_record_alloc(p, size, CHURN_ALLOC_ALIGNED);
    return p;
}

static void *w_memalign(size_t align, size_t size)
{
    if (!churn_tracing())
        return exe.memalign(align, size);
    CHURN_GUARD();
    return record_aligned(exe.memalign(align, size), size);
}

static void *w_aligned_alloc(size_t align, size_t size)
{
    if (!churn_tracing())
        return exe.aligned_alloc(align, size);
    CHURN_GUARD();
    return record_aligned(exe.aligned_alloc(align, size), size);
}

static void *w_valloc(size_t size)
{
    if (!churn_tracing())
        return exe.valloc(size);
    CHURN_GUARD();
    return record_aligned(exe.valloc(size), size);
}

/* Recorded with the size rounded to pages, as interpose.c does. */
static void *w_pvalloc(size_t size)
{
    if (!churn_tracing())
        return exe.pvalloc(size);
    CHURN_GUARD();
    size_t rounded = size ? (size + page_size - 1) & ~(page_size - 1) : page_size;
    return record_aligned(exe.pvalloc(size), rounded);
}

static int w_posix_memalign(void **out, size_t align, size_t size)
{
    if (!churn_tracing())
        return exe.posix_memalign(out, align, size);
    CHURN_GUARD();
    int rc = exe.posix_memalign(out, align, size);
    if (!rc)
        churn_record_alloc(*out, size, CHURN_ALLOC_ALIGNED);
    return rc;
}

/* ---- C++: every operator the executable defines (cxx.c names the variants) ---- */

/* A throwing operator new leaves through the guard's cleanup (built with -fexceptions). */
#define NEW(sym, kind, call, fallback, ...)                                                    \
    static void *exe_##sym;                                                                    \
    static void *w_##sym(__VA_ARGS__)                                                          \
    {                                                                                          \
        void *f = exe_##sym;                                                                   \
        if (!churn_tracing())                                                                  \
            return call;                                                                       \
        CHURN_GUARD();                                                                         \
        void *p = call;                                                                        \
        churn_record_alloc(p, size, kind);                                                     \
        return p;                                                                              \
    }

CHURN_CXX_NEWS(NEW)

/* The extra arguments (size, alignment, nothrow) pass through untouched in their registers. */
#define DELETE(sym, kind)                                                                      \
    static void *exe_##sym;                                                                    \
    static void w_##sym(void *p, uintptr_t a, uintptr_t b)                                     \
    {                                                                                          \
        if (!p || !churn_tracing()) {                                                          \
            ((churn_delete_fn)exe_##sym)(p, a, b);                                             \
            return;                                                                            \
        }                                                                                      \
        CHURN_GUARD();                                                                         \
        churn_record_free(p, kind);                                                            \
        ((churn_delete_fn)exe_##sym)(p, a, b);                                                 \
    }

CHURN_CXX_DELETES(DELETE)

/* ---- installing ---- */

typedef struct target {
    const char *name;
    void *replacement;
    void **original;
} target;

#define C_TARGET(f) {#f, (void *)w_##f, (void **)&exe.f}
#define CXX_TARGET(sym) {#sym, (void *)w_##sym, &exe_##sym}

static const target targets[] = {
    C_TARGET(malloc), C_TARGET(free), C_TARGET(calloc), C_TARGET(realloc),
    C_TARGET(reallocarray), C_TARGET(memalign), C_TARGET(posix_memalign),
    C_TARGET(aligned_alloc), C_TARGET(valloc), C_TARGET(pvalloc),
#define NEW_TARGET(sym, ...) CXX_TARGET(sym),
#define DELETE_TARGET(sym, kind) CXX_TARGET(sym),
    CHURN_CXX_NEWS(NEW_TARGET) CHURN_CXX_DELETES(DELETE_TARGET)
#undef NEW_TARGET
#undef DELETE_TARGET
};
#define NTARGETS (sizeof targets / sizeof *targets)

/* The executable's malloc is the one every call binds to (and not a library's ahead of
   libchurn, which this way does not patch). */
static int patch_applies(void)
{
    uintptr_t mine = churn_exe_symbol("malloc");
    return churn_malloc_is_ahead() && mine && mine == (uintptr_t)dlsym(RTLD_DEFAULT, "malloc");
}

static int patch_install(void)
{
    return churn_patch_family(churn_exe_symbol, "the executable's");
}

int churn_patch_family(uintptr_t (*lookup)(const char *name), const char *whose)
{
    uintptr_t addr[NTARGETS];
    for (size_t i = 0; i < NTARGETS; i++) {
        addr[i] = lookup(targets[i].name);
        const char *why = NULL;
        /* An alias of a function already patched (the same address under two names) is
           traced through the first name's replacement. */
        size_t j = 0;
        while (j < i && addr[j] != addr[i])
            j++;
        if (!addr[i] || j < i)
            continue;
        if (churn_patch_redirect((void *)addr[i], targets[i].replacement, targets[i].original,
                                 &why)) {
            churn_log("cannot patch %s %s: %s; not tracing", whose, targets[i].name, why);
            return -1;
        }
    }
    if (!exe.free) {
        churn_log("%s malloc has no free beside it; not tracing", whose);
        return -1;
    }
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    /* libchurn's own calls of the real allocator (realloc's, the usable size of events) must
       reach the executable's: glibc's would be handed blocks it never made. */
    churn_real_resolve();
    churn_next.malloc = exe.malloc;
    churn_next.free = exe.free;
    churn_next.usable_size = (size_t(*)(void *))lookup("malloc_usable_size");
#define TAKE(f) if (exe.f) churn_next.f = exe.f
    TAKE(calloc);
    TAKE(realloc);
    TAKE(memalign);
    TAKE(posix_memalign);
    TAKE(aligned_alloc);
    TAKE(valloc);
    TAKE(pvalloc);
#undef TAKE
    return 0;
}

const churn_way churn_way_patch = {"patch", patch_applies, patch_install};
