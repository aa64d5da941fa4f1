/*
 * Coroutines: the stack a thread runs on after swapcontext or setcontext (shim.h,
 * "ucontext.c, thread.c").  A context made by makecontext names its stack in uc_stack, and
 * glibc never writes that field, so a context saved by swapcontext while it ran there still
 * names it; the context's saved stack pointer must lie inside for the bounds to be taken.
 * A context that names no stack of its own (the thread's own, saved by getcontext or
 * swapcontext) gives none: the walk then finds the thread's own stack by itself.
 *
 * swapcontext comes back, when some later switch resumes its caller, on the stack it left:
 * the bounds it left are kept in its own frame there and put back.  A longjmp or siglongjmp
 * out of a coroutine (a signal handler's, when the coroutine overflowed its stack) never
 * comes back through it: the jump wrappers (guard.c) say where the jump lands instead.
 */
#include <signal.h>
#include <ucontext.h>

#include "shim.h"

static void enter(const ucontext_t *ucp)
{
    uintptr_t lo = (uintptr_t)ucp->uc_stack.ss_sp, size = ucp->uc_stack.ss_size;
    uintptr_t sp = (uintptr_t)ucp->uc_mcontext.gregs[REG_RSP];
    if (size && lo + size > lo && sp > lo && sp <= lo + size) {
        churn_stack_lo = lo;
        churn_stack_hi = lo + size;
    } else {
        churn_stack_lo = churn_stack_hi = 0;
    }
}

CHURN_API int swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
    static void *_Atomic next;
    int (*real)(ucontext_t *, const ucontext_t *) =
        (int (*)(ucontext_t *, const ucontext_t *))churn_next_of(&next, "swapcontext");
    uintptr_t lo = churn_stack_lo, hi = churn_stack_hi;
    enter(ucp);
    int rc = real(oucp, ucp);
    churn_stack_lo = lo;
    churn_stack_hi = hi;
    return rc;
}

CHURN_API int setcontext(const ucontext_t *ucp)
{
    static void *_Atomic next;
    int (*real)(const ucontext_t *) =
        (int (*)(const ucontext_t *))churn_next_of(&next, "setcontext");
    uintptr_t lo = churn_stack_lo, hi = churn_stack_hi;
    enter(ucp);
    int rc = real(ucp); /* returns only when it fails */
    churn_stack_lo = lo;
    churn_stack_hi = hi;
    return rc;
}

/* Off the stack the thread ran on, a jump lands on the thread's own stack, or in a handler on
   the sigaltstack, which returns to where it interrupted, or on a stack libchurn does not
   know. */
void churn_stack_jumped(uintptr_t target)
{
    if (target - churn_stack_lo < churn_stack_hi - churn_stack_lo)
        return;
    const churn_thread *t = churn_thread_current();
    if (t && target - t->stack_lo < t->stack_hi - t->stack_lo) {
        churn_stack_lo = t->stack_lo;
        churn_stack_hi = t->stack_hi;
        return;
    }
    stack_t ss;
    if (!sigaltstack(NULL, &ss) && (ss.ss_flags & SS_ONSTACK) &&
        target - (uintptr_t)ss.ss_sp < ss.ss_size)
        return;
    churn_stack_lo = churn_stack_hi = 0;
}
