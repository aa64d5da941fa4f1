/*
 * The re-entrancy guard when the program jumps out of libchurn (shim.h, "guard.c").
 *
 * A signal handler that interrupted the thread while it held the guard, inside libchurn or
 * the allocator libchurn called, and leaves by siglongjmp (a stack overflow caught and
 * reported, a timeout) never returns to the code that would have released it.  The jump
 * functions are wrapped here: a jump whose target frame is outside the one that took the
 * guard leaves that frame for good, and the guard with it.  A jump inside a handler that runs
 * on the sigaltstack, to a place on that stack, stays within the handler and keeps it.  A jump
 * also lands on a stack, maybe another than the one it leaves (a coroutine's abandoned): the
 * bounds of the stack the thread runs on follow it (ucontext.c).
 *
 * What the abandoned code was doing is left as it is: a thread's ring publishes an event in
 * one store, after the event is whole; an event number taken and never pushed is let go by
 * the writer (writer.c); the thread's walk memory and stack-id cache, which a walk updates in
 * several stores, are forgotten.  A stack overflow never comes inside libchurn's own work
 * (shim.h, CHURN_RECORD_ROOM), so no lock of libchurn's is held by the frames a jump leaves.
 */
#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include "shim.h"

__thread uintptr_t churn_guard_frame;

typedef void (*jump_fn)(struct __jmp_buf_tag *, int) __attribute__((noreturn));
static void *_Atomic next_longjmp, *_Atomic next__longjmp, *_Atomic next_siglongjmp,
    *_Atomic next___longjmp_chk;
static int readable_targets;

/* glibc keeps a jmp_buf's stack pointer mangled (its PTR_MANGLE: xor with the thread's
   pointer guard at %fs:0x30, rotate left by 17); JB_RSP is slot 6 on x86-64. */
static uintptr_t jump_target(const struct __jmp_buf_tag *env)
{
    uintptr_t sp = (uintptr_t)env->__jmpbuf[6];
    __asm__("ror $0x11, %0\n\txor %%fs:0x30, %0" : "+r"(sp));
    return sp;
}

/* Whether jump_target reads this libc's jmp_buf: a setjmp here must give a stack pointer
   inside this function's frame. */
static __attribute__((noinline)) int targets_readable(void)
{
    jmp_buf here;
    if (setjmp(here))
        return 0;
    uintptr_t sp = jump_target(here), frame = (uintptr_t)__builtin_frame_address(0);
    return sp < frame && frame - sp < 4096;
}

void churn_guard_init(void)
{
    churn_next_of(&next_longjmp, "longjmp");
    churn_next_of(&next__longjmp, "_longjmp");
    churn_next_of(&next_siglongjmp, "siglongjmp");
    churn_next_of(&next___longjmp_chk, "__longjmp_chk");
    readable_targets = targets_readable();
}

/* Stacks grow down: a target above the guard's frame is outside it, unless the jump stays on
   the sigaltstack the calling handler runs on (asked of the kernel only then). */
static int leaves_guard(uintptr_t target)
{
    uintptr_t frame = churn_guard_frame;
    if (!churn_in_shim || !frame || target <= frame)
        return 0;
    stack_t ss;
    if (!sigaltstack(NULL, &ss) && (ss.ss_flags & SS_ONSTACK) &&
        target - (uintptr_t)ss.ss_sp < ss.ss_size)
        return 0;
    return 1;
}

/* A jump lands on the stack of its target (ucontext.c), and leaves the guard when it lands
   outside the frame that took it. */
static void jumping(const struct __jmp_buf_tag *env)
{
    if (!readable_targets)
        return;
    uintptr_t target = jump_target(env);
    churn_stack_jumped(target);
    if (CHURN_LIKELY(!leaves_guard(target)))
        return;
    churn_in_shim = 0;
    churn_guard_frame = 0;
    churn_thread *t = churn_thread_current();
    if (t) {
        churn_cfi_thread_forget(&t->cfi);
        memset(t->cache_hash, 0, sizeof t->cache_hash);
    }
}

#define JUMP(name)                                                                             \
    CHURN_API __attribute__((noreturn)) void name(struct __jmp_buf_tag env[1], int val)        \
    {                                                                                          \
        jumping(env);                                                                          \
        ((jump_fn)churn_next_of(&next_##name, #name))(env, val);                               \
    }

JUMP(longjmp)
JUMP(_longjmp)
JUMP(siglongjmp)
void __longjmp_chk(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));
JUMP(__longjmp_chk)
