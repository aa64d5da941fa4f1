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

#include "elfsyms.h"
#include "patch.h"
#include "shim.h"
#include "way.h"

static void guard_release(int *g) { churn_in_shim = *g; }
#define GUARD() int guard_ __attribute__((cleanup(guard_release))) = churn_in_shim; churn_in_shim = 1

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
    GUARD();
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
    GUARD();
    churn_record_free(p, CHURN_FREE_FREE);
    exe.free(p);
}

static void *w_calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total) || !churn_tracing())
        return exe.calloc(n, size);
    GUARD();
    void *p = exe.calloc(n, size);
    churn_record_alloc(p, total, CHURN_ALLOC_CALLOC);
    return p;
}

/* churn_record_realloc calls churn_next.realloc, which install() points at the executable's */
static void *w_realloc(void *p, size_t size)
{
    if (!churn_tracing())
        return exe.realloc(p, size);
    GUARD();
    return churn_record_realloc(p, size);
}

static void *w_reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total) || !churn_tracing() || !exe.realloc)
        return exe.reallocarray(p, n, size);
    GUARD();
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
    GUARD();
    return record_aligned(exe.memalign(align, size), size);
}

static void *w_aligned_alloc(size_t align, size_t size)
{
    if (!churn_tracing())
        return exe.aligned_alloc(align, size);
    GUARD();
    return record_aligned(exe.aligned_alloc(align, size), size);
}

static void *w_valloc(size_t size)
{
    if (!churn_tracing())
        return exe.valloc(size);
    GUARD();
    return record_aligned(exe.valloc(size), size);
}

/* Recorded with the size rounded to pages, as interpose.c does. */
static void *w_pvalloc(size_t size)
{
    if (!churn_tracing())
        return exe.pvalloc(size);
    GUARD();
    size_t rounded = size ? (size + page_size - 1) & ~(page_size - 1) : page_size;
    return record_aligned(exe.pvalloc(size), rounded);
}

static int w_posix_memalign(void **out, size_t align, size_t size)
{
    if (!churn_tracing())
        return exe.posix_memalign(out, align, size);
    GUARD();
    int rc = exe.posix_memalign(out, align, size);
    if (!rc)
        churn_record_alloc(*out, size, CHURN_ALLOC_ALIGNED);
    return rc;
}

/* ---- C++: every operator the executable defines (cxx.c names the variants) ---- */

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);
typedef void (*del3_fn)(void *, uintptr_t, uintptr_t);

/* A throwing operator new leaves through the guard's cleanup (built with -fexceptions). */
#define NEW(sym, kind, call, ...)                                                         \
    static void *exe_##sym;                                                               \
    static void *w_##sym(__VA_ARGS__)                                                     \
    {                                                                                     \
        void *f = exe_##sym;                                                              \
        if (!churn_tracing())                                                             \
            return call;                                                                  \
        GUARD();                                                                          \
        void *p = call;                                                                   \
        churn_record_alloc(p, size, kind);                                                \
        return p;                                                                         \
    }

NEW(_Znwm, CHURN_ALLOC_NEW, ((new_fn)f)(size), size_t size)
NEW(_Znam, CHURN_ALLOC_NEW_ARRAY, ((new_fn)f)(size), size_t size)
NEW(_ZnwmRKSt9nothrow_t, CHURN_ALLOC_NEW, ((new_nt_fn)f)(size, nt), size_t size, const void *nt)
NEW(_ZnamRKSt9nothrow_t, CHURN_ALLOC_NEW_ARRAY, ((new_nt_fn)f)(size, nt), size_t size,
    const void *nt)
NEW(_ZnwmSt11align_val_t, CHURN_ALLOC_NEW, ((new_al_fn)f)(size, al), size_t size, size_t al)
NEW(_ZnamSt11align_val_t, CHURN_ALLOC_NEW_ARRAY, ((new_al_fn)f)(size, al), size_t size,
    size_t al)
NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, CHURN_ALLOC_NEW, ((new_al_nt_fn)f)(size, al, nt),
    size_t size, size_t al, const void *nt)
NEW(_ZnamSt11align_val_tRKSt9nothrow_t, CHURN_ALLOC_NEW_ARRAY, ((new_al_nt_fn)f)(size, al, nt),
    size_t size, size_t al, const void *nt)

/* The extra arguments (size, alignment, nothrow) pass through untouched in their registers. */
#define DELETE(sym, kind)                                                                 \
    static void *exe_##sym;                                                               \
    static void w_##sym(void *p, uintptr_t a, uintptr_t b)                                \
    {                                                                                     \
        if (!p || !churn_tracing()) {                                                     \
            ((del3_fn)exe_##sym)(p, a, b);                                                \
            return;                                                                       \
        }                                                                                 \
        GUARD();                                                                          \
        churn_record_free(p, kind);                                                       \
        ((del3_fn)exe_##sym)(p, a, b);                                                    \
    }

DELETE(_ZdlPv, CHURN_FREE_DELETE)
DELETE(_ZdaPv, CHURN_FREE_DELETE_ARRAY)
DELETE(_ZdlPvm, CHURN_FREE_DELETE)
DELETE(_ZdaPvm, CHURN_FREE_DELETE_ARRAY)
DELETE(_ZdlPvRKSt9nothrow_t, CHURN_FREE_DELETE)
DELETE(_ZdaPvRKSt9nothrow_t, CHURN_FREE_DELETE_ARRAY)
DELETE(_ZdlPvSt11align_val_t, CHURN_FREE_DELETE)
DELETE(_ZdaPvSt11align_val_t, CHURN_FREE_DELETE_ARRAY)
DELETE(_ZdlPvmSt11align_val_t, CHURN_FREE_DELETE)
DELETE(_ZdaPvmSt11align_val_t, CHURN_FREE_DELETE_ARRAY)
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, CHURN_FREE_DELETE)
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, CHURN_FREE_DELETE_ARRAY)

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
    CXX_TARGET(_Znwm), CXX_TARGET(_Znam), CXX_TARGET(_ZnwmRKSt9nothrow_t),
    CXX_TARGET(_ZnamRKSt9nothrow_t), CXX_TARGET(_ZnwmSt11align_val_t),
    CXX_TARGET(_ZnamSt11align_val_t), CXX_TARGET(_ZnwmSt11align_val_tRKSt9nothrow_t),
    CXX_TARGET(_ZnamSt11align_val_tRKSt9nothrow_t), CXX_TARGET(_ZdlPv), CXX_TARGET(_ZdaPv),
    CXX_TARGET(_ZdlPvm), CXX_TARGET(_ZdaPvm), CXX_TARGET(_ZdlPvRKSt9nothrow_t),
    CXX_TARGET(_ZdaPvRKSt9nothrow_t), CXX_TARGET(_ZdlPvSt11align_val_t),
    CXX_TARGET(_ZdaPvSt11align_val_t), CXX_TARGET(_ZdlPvmSt11align_val_t),
    CXX_TARGET(_ZdaPvmSt11align_val_t), CXX_TARGET(_ZdlPvSt11align_val_tRKSt9nothrow_t),
    CXX_TARGET(_ZdaPvSt11align_val_tRKSt9nothrow_t),
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
    uintptr_t addr[NTARGETS];
    for (size_t i = 0; i < NTARGETS; i++) {
        addr[i] = churn_exe_symbol(targets[i].name);
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
            churn_log("cannot patch the executable's %s: %s; not tracing", targets[i].name, why);
            return -1;
        }
    }
    if (!exe.free) {
        churn_log("the executable defines malloc but not free; not tracing");
        return -1;
    }
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    /* libchurn's own calls of the real allocator (realloc's, the usable size of events) must
       reach the executable's: glibc's would be handed blocks it never made. */
    churn_real_resolve();
    churn_next.malloc = exe.malloc;
    churn_next.free = exe.free;
    churn_next.usable_size = (size_t(*)(void *))churn_exe_symbol("malloc_usable_size");
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
