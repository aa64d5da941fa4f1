/*
 * C++ operator new and delete, every variant, by their mangled names.  Each forwards to the
 * next definition in line (libstdc++'s, or a preloaded tcmalloc/jemalloc whose operators
 * never call malloc).  A throwing new that throws leaves through the guard's cleanup.
 */
#include <stdlib.h>

#include "cxx_ops.h"
#include "shim.h"

static void guard_release(int *g) { churn_in_shim = *g; }
#define GUARD() int guard_ __attribute__((cleanup(guard_release))) = churn_in_shim; churn_in_shim = 1

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
        void *f = churn_next_of(&next, #sym);                                             \
        void *p = f ? call_next : fallback;                                               \
        if (traced)                                                                       \
            churn_record_alloc(p, size, kind);                                            \
        return p;                                                                         \
    }

CHURN_CXX_NEWS(NEW)

/* Every delete is recorded before the next one frees. */
#define DELETE(sym, kind)                                                                 \
    CHURN_API void sym(void *p, uintptr_t a, uintptr_t b)                                 \
    {                                                                                     \
        static void *_Atomic next;                                                        \
        if (!p)                                                                           \
            return;                                                                       \
        int traced = tracing();                                                           \
        GUARD();                                                                          \
        if (traced)                                                                       \
            churn_record_free(p, kind);                                                   \
        void *f = churn_next_of(&next, #sym);                                             \
        if (f)                                                                            \
            ((churn_delete_fn)f)(p, a, b);                                                        \
        else                                                                              \
            free(p);                                                                      \
    }

CHURN_CXX_DELETES(DELETE)
