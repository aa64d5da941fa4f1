/*
 * C++ operator new and delete, every variant, by their mangled names.  Each forwards to the
 * next definition in line (libstdc++'s, or a preloaded tcmalloc/jemalloc whose operators
 * never call malloc).  A throwing new that throws leaves through the guard's cleanup.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "shim.h"

static void guard_release(int *g) { churn_in_shim = *g; }
#define GUARD() int guard_ __attribute__((cleanup(guard_release))) = churn_in_shim; churn_in_shim = 1

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);
typedef void (*del_fn)(void *);

/* Looked up on first use, under the guard, so dlsym's own allocations are not traced. */
static void *next_of(void *_Atomic *slot, const char *name)
{
    void *f = atomic_load_explicit(slot, memory_order_acquire);
    if (!f) {
        f = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(slot, f, memory_order_release);
    }
    return f;
}

static int tracing(void)
{
    if (churn_in_shim)
        return 0;
    if (CHURN_UNLIKELY(atomic_load_explicit(&churn_state, memory_order_relaxed) == CHURN_OFF))
        churn_ensure_init();
    return atomic_load_explicit(&churn_state, memory_order_relaxed) == CHURN_ON;
}

#define NEW(sym, kind, call_next, fallback, ...)                                          \
    CHURN_API void *sym(__VA_ARGS__)                                                      \
    {                                                                                     \
        static void *_Atomic next;                                                        \
        int traced = tracing();                                                           \
        GUARD();                                                                          \
        void *f = next_of(&next, #sym);                                                   \
        void *p = f ? call_next : fallback;                                               \
        if (traced)                                                                       \
            churn_record_alloc(p, size, kind);                                            \
        return p;                                                                         \
    }

NEW(_Znwm, CHURN_ALLOC_NEW, ((new_fn)f)(size), malloc(size), size_t size)
NEW(_Znam, CHURN_ALLOC_NEW_ARRAY, ((new_fn)f)(size), malloc(size), size_t size)
NEW(_ZnwmRKSt9nothrow_t, CHURN_ALLOC_NEW, ((new_nt_fn)f)(size, nt), malloc(size), size_t size,
    const void *nt)
NEW(_ZnamRKSt9nothrow_t, CHURN_ALLOC_NEW_ARRAY, ((new_nt_fn)f)(size, nt), malloc(size),
    size_t size, const void *nt)
NEW(_ZnwmSt11align_val_t, CHURN_ALLOC_NEW, ((new_al_fn)f)(size, al), aligned_alloc(al, size),
    size_t size, size_t al)
NEW(_ZnamSt11align_val_t, CHURN_ALLOC_NEW_ARRAY, ((new_al_fn)f)(size, al),
    aligned_alloc(al, size), size_t size, size_t al)
NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, CHURN_ALLOC_NEW, ((new_al_nt_fn)f)(size, al, nt),
    aligned_alloc(al, size), size_t size, size_t al, const void *nt)
NEW(_ZnamSt11align_val_tRKSt9nothrow_t, CHURN_ALLOC_NEW_ARRAY, ((new_al_nt_fn)f)(size, al, nt),
    aligned_alloc(al, size), size_t size, size_t al, const void *nt)

/* Every delete is recorded before the next one frees; the extra arguments (size, alignment,
   nothrow) are passed on untouched, whatever their types, by forwarding all three registers. */
typedef void (*del3_fn)(void *, uintptr_t, uintptr_t);

#define DELETE(sym, kind, ...)                                                            \
    CHURN_API void sym(void *p, uintptr_t a, uintptr_t b)                                 \
    {                                                                                     \
        static void *_Atomic next;                                                        \
        if (!p)                                                                           \
            return;                                                                       \
        int traced = tracing();                                                           \
        GUARD();                                                                          \
        if (traced)                                                                       \
            churn_record_free(p, kind);                                                   \
        void *f = next_of(&next, #sym);                                                   \
        if (f)                                                                            \
            ((del3_fn)f)(p, a, b);                                                        \
        else                                                                              \
            free(p);                                                                      \
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
