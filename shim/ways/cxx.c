/*
 * C++ operator new and delete, every variant, by their mangled names.  Each forwards to the
 * next definition in line (libstdc++'s, or a preloaded tcmalloc/jemalloc whose operators
 * never call malloc).  A throwing new that throws leaves through the guard's cleanup.
 *
 * The guard keeps the next operator's own malloc from being traced twice, but two things
 * that happen inside that operator are the program's: the new_handler it calls when memory
 * runs out (which may free a reserve block), and the bad_alloc it throws, whose object the
 * program's catch frees.  Both reach libstdc++'s exported functions through the PLT
 * (std::get_new_handler or std::set_new_handler, __cxa_allocate_exception,
 * __cxa_free_exception), so those are wrapped: inside a traced operator new they run with the
 * guard lifted.
 */
#include <stdlib.h>

#include "ways/cxx_ops.h"
#include "shim.h"

/* Set while a traced operator new runs the next one: what that calls back is the program's.
   NEW_HANDLER: its new_handler.  NEW_THROWS: the bad_alloc it throws, which the program's
   catch frees, when the operator is a throwing one (libstdc++'s nothrow new calls the
   throwing one and catches inside itself: both ends of that exception stay untraced). */
#define NEW_HANDLER 1
#define NEW_THROWS 2
static __thread int in_new;
static void in_new_release(int *was) { in_new = *was; }
#define IN_NEW(traced, sym)                                                               \
    int in_new_ __attribute__((cleanup(in_new_release))) = in_new;                       \
    if (traced)                                                                           \
    in_new = NEW_HANDLER | (__builtin_strstr(sym, "nothrow") ? 0 : NEW_THROWS)

/* The program's own code, called from inside the next operator new: traced as usual. */
typedef struct {
    int in_shim, in_new;
    uintptr_t frame;
} unguarded_saved;
static void unguarded_release(unguarded_saved *saved)
{
    churn_in_shim = saved->in_shim;
    churn_guard_frame = saved->frame;
    in_new = saved->in_new;
}
#define UNGUARDED()                                                                            \
    unguarded_saved unguarded_ __attribute__((cleanup(unguarded_release))) = {                 \
        churn_in_shim, in_new, churn_guard_frame};                                             \
    churn_in_shim = 0;                                                                         \
    in_new = 0

static int tracing(void)
{
    if (churn_in_shim)
        return 0;
    if (CHURN_UNLIKELY(atomic_load_explicit(&churn_state, memory_order_relaxed) == CHURN_OFF))
        churn_ensure_init();
    return atomic_load_explicit(&churn_state, memory_order_relaxed) == CHURN_ON &&
           !churn_stack_short();
}

#define NEW(sym, kind, call_next, fallback, ...)                                               \
    CHURN_API void *sym(__VA_ARGS__)                                                           \
    {                                                                                          \
        static void *_Atomic next;                                                             \
        int traced = tracing();                                                                \
        CHURN_GUARD();                                                                         \
        IN_NEW(traced, #sym);                                                                  \
        void *f = churn_next_of(&next, #sym);                                                  \
        void *p = f ? call_next : fallback;                                                    \
        if (traced)                                                                            \
            churn_record_alloc(p, size, kind);                                                 \
        return p;                                                                              \
    }

CHURN_CXX_NEWS(NEW)

/* Every delete is recorded before the next one frees. */
#define DELETE(sym, kind)                                                                      \
    CHURN_API void sym(void *p, uintptr_t a, uintptr_t b)                                      \
    {                                                                                          \
        static void *_Atomic next;                                                             \
        if (!p)                                                                                \
            return;                                                                            \
        int traced = tracing();                                                                \
        CHURN_GUARD();                                                                         \
        if (traced)                                                                            \
            churn_record_free(p, kind);                                                        \
        void *f = churn_next_of(&next, #sym);                                                  \
        if (f)                                                                                 \
            ((churn_delete_fn)f)(p, a, b);                                                     \
        else                                                                                   \
            free(p);                                                                           \
    }

CHURN_CXX_DELETES(DELETE)

/* ---- what the next operator new calls back ---- */

typedef void (*new_handler_fn)(void);
static __thread new_handler_fn program_handler;

static void run_program_handler(void)
{
    new_handler_fn h = program_handler;
    UNGUARDED();
    h();
}

/* std::get_new_handler(): asked by operator new when memory ran out.  Inside a traced
   operator new the handler is called through run_program_handler. */
CHURN_API new_handler_fn _ZSt15get_new_handlerv(void)
{
    static void *_Atomic next;
    new_handler_fn (*real)(void) = (new_handler_fn(*)(void))churn_next_of(&next, "_ZSt15get_new_handlerv");
    new_handler_fn h = real ? real() : NULL;
    if (!h || !(in_new & NEW_HANDLER))
        return h;
    program_handler = h;
    return run_program_handler;
}

/* std::set_new_handler(): jemalloc's and gperftools' operator new read the handler by setting
   it to null and back.  Inside a traced operator new the handler they read is
   run_program_handler, and setting that back sets the program's. */
CHURN_API new_handler_fn _ZSt15set_new_handlerPFvvE(new_handler_fn h)
{
    static void *_Atomic next;
    new_handler_fn (*real)(new_handler_fn) =
        (new_handler_fn(*)(new_handler_fn))churn_next_of(&next, "_ZSt15set_new_handlerPFvvE");
    if (h == run_program_handler)
        h = program_handler;
    new_handler_fn old = real ? real(h) : NULL;
    if (!old || !(in_new & NEW_HANDLER))
        return old;
    program_handler = old;
    return run_program_handler;
}

CHURN_API void *__cxa_allocate_exception(size_t size)
{
    static void *_Atomic next;
    void *(*real)(size_t) = (void *(*)(size_t))churn_next_of(&next, "__cxa_allocate_exception");
    if (!(in_new & NEW_THROWS))
        return real(size);
    UNGUARDED();
    return real(size);
}

/* Called when the catch that took the exception ends (libstdc++'s nothrow operator new
   catches inside itself, so this can be inside a traced operator new too). */
CHURN_API void __cxa_free_exception(void *p)
{
    static void *_Atomic next;
    void (*real)(void *) = (void (*)(void *))churn_next_of(&next, "__cxa_free_exception");
    if (!(in_new & NEW_THROWS)) {
        real(p);
        return;
    }
    UNGUARDED();
    real(p);
}
