/*
 * Stack capture: raw instruction pointers only, symbolized later offline.
 *
 * By default (CHURN_UNWIND=cfi) the cached CFI walker in cfi.c takes the stack, a few loads a
 * frame; for the stacks it cannot be sure of (expression rules, signal frames, code without
 * CFI) libunwind takes it instead, as it takes every stack under CHURN_UNWIND=libunwind: over
 * an address space whose every read is checked (unwind_checked.c), so that hostile CFI cannot
 * make it read wherever a register points.  CHURN_UNWIND=verify is the test of that claim:
 * each stack is also taken by libunwind's own local unwinder (fast, and trusting the CFI: a
 * test mode for programs whose CFI is sound), and any difference aborts the process.  The
 * frame-pointer walk (fp) is for programs that keep frame pointers.  Frames inside libchurn
 * itself are dropped, wherever they are in the stack.
 *
 * A walk knows the bounds of the stack it runs on: the thread's own, a coroutine's the thread
 * switched to, the sigaltstack of a handler.  On a stack whose bounds libchurn does not know
 * (one the program switched to by its own means) it reads only libchurn's own frames.  A walk
 * also needs stack of its own below the stack pointer: where the stack left is less than the
 * walk needs (a small sigaltstack or coroutine stack), or its bounds are not known, the stack
 * is cut to the caller of the way in (found by libchurn's own frame pointers, a few bytes of
 * stack) and counted; the trace says how many (CHURN_REC_SHORT_STACKS).
 */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <signal.h>
#include <stdlib.h>

#include "walk/cfi.h"
#include "shim.h"

/* Room for libchurn's own frames on top of the requested depth (callers' buffers have it). */
enum { OWN = 8 };

/* Marks a cache key that hashes a whole walk, not the (cut) stack itself. */
#define DEEP_KEY 0x5bd1e9955bd1e995ull

static _Atomic uint64_t verified, verified_fast, verified_frames;
static _Atomic uint64_t short_stacks;

/* Stack below the stack pointer that each walk may take, twice its measured worst case or
   more.  The worst is a walk through a signal frame with every cache cold: the CFI walker
   gives up and libunwind walks it, 1.8 KiB below the allocating function's frame with its
   registers and cursor in the thread's ring mapping (test/t_small_stack.sh prints what it
   takes beyond the program's own use of a thread's stack); libunwind's code is not ours, and
   an unusual frame (a long DWARF expression) may take it deeper, so it keeps the room its
   local unwinder needed, 7.9 KiB at the worst measured.  The CFI walker alone, a first-seen return address included, takes 1.1 KiB below
   a coroutine's malloc (test/t_coroutine_stacks.sh; its largest frames, gcc -fstack-usage,
   are the rule's reading inside dl_iterate_phdr's callback); a short walk with the record
   path 0.4 KiB of a sigaltstack. */
#define ROOM_CFI (3u << 10)
#define ROOM_LIBUNWIND (16u << 10)
/* What libchurn's own frames between a way in and the walk can take, at most: a bound on the
   reads of a short walk on a stack of unknown bounds, which follows only those frames. */
#define OWN_FRAMES_BYTES (16u << 10)

uint64_t churn_unwind_short_stacks(void)
{
    return atomic_load_explicit(&short_stacks, memory_order_relaxed);
}

void churn_unwind_reset_counts(void)
{
    atomic_store(&short_stacks, 0);
    atomic_store(&verified, 0);
    atomic_store(&verified_fast, 0);
    atomic_store(&verified_frames, 0);
}

/* The bounds of the stack sp is on: the one the thread runs on (a coroutine's, or its own:
   churn_stack_lo and churn_stack_hi), the thread's own, or the sigaltstack a handler runs on
   (asked of the kernel only then).  NO_STACK when libchurn does not know them. */
enum { NO_STACK, THREAD_STACK, ALT_STACK };
static int stack_of(const churn_thread *t, uintptr_t sp, churn_stack_range *s)
{
    if (CHURN_LIKELY(sp - churn_stack_lo < churn_stack_hi - churn_stack_lo)) {
        *s = (churn_stack_range){churn_stack_lo, churn_stack_hi};
        return THREAD_STACK;
    }
    if (t && sp - t->stack_lo < t->stack_hi - t->stack_lo) {
        *s = (churn_stack_range){t->stack_lo, t->stack_hi};
        return THREAD_STACK;
    }
    stack_t ss;
    if (!sigaltstack(NULL, &ss) && (ss.ss_flags & SS_ONSTACK) &&
        sp - (uintptr_t)ss.ss_sp < ss.ss_size) {
        *s = (churn_stack_range){(uintptr_t)ss.ss_sp, (uintptr_t)ss.ss_sp + ss.ss_size};
        return ALT_STACK;
    }
    return NO_STACK;
}

void churn_unwind_init(void)
{
    /* libunwind's start-up opens its memory-probe pipe, one of our descriptors (fds.c) */
    churn_fd_guard_unwinder((const void *)unw_set_caching_policy);
    churn_unwind_checked_init();
    if (churn_opt.unwind == CHURN_UNWIND_VERIFY)
        unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    churn_cfi_skip_frames_of(churn_self_lo, churn_self_hi);
}

/* Code ranges of an allocator whose hooks call us (way_tcmalloc.c): its frames between our
   hook and the program's call are the allocator's, not the program's callsite. */
static uintptr_t allocator_lo[2], allocator_hi[2];

void churn_unwind_skip_allocator(unsigned i, uintptr_t lo, uintptr_t hi)
{
    if (i < 2) {
        allocator_lo[i] = lo;
        allocator_hi[i] = hi;
    }
}

static int own_or_allocator(uintptr_t ip)
{
    return (ip >= churn_self_lo && ip < churn_self_hi) ||
           (ip >= allocator_lo[0] && ip < allocator_hi[0]) ||
           (ip >= allocator_lo[1] && ip < allocator_hi[1]);
}

/* Drops the frames on top that are ours or the hooking allocator's, and every frame of ours
   further out: a wrapper of ours that calls into libc stays on the stack of what libc
   allocates under it (pthread_create's thread memory, a dlopen's), between the program's
   frames and libc's, and is no part of the program's stack. */
static unsigned skip_own_frames(uintptr_t *ips, unsigned n)
{
    unsigned skip = 0, kept = 0;
    while (skip < n && own_or_allocator(ips[skip]))
        skip++;
    for (unsigned i = skip; i < n; i++)
        if (!(ips[i] >= churn_self_lo && ips[i] < churn_self_hi))
            ips[kept++] = ips[i];
    return kept;
}

/* Follows saved %rbp links while they stay inside the live part of the stack it runs on (from
   our own frame up to top, the thread's stack or the sigaltstack: pthread's range for the main
   thread includes pages that are not mapped, and so does the gap between a sigaltstack and the
   thread's stack) and move outwards; the first frame (the caller of the intercepted function)
   is taken from our own frame. */
static unsigned fp_walk(uintptr_t *ips, unsigned max, uintptr_t top)
{
    uintptr_t *fp = __builtin_frame_address(0);
    uintptr_t lo = (uintptr_t)fp, hi = top;
    unsigned n = 0;
    if (hi < lo + 16)
        return 0;
    /* Written so that no sum can wrap: a garbage rbp may be anything, -16 included. */
    while (n < max && (uintptr_t)fp >= lo && (uintptr_t)fp <= hi - 16 && !((uintptr_t)fp & 7)) {
        uintptr_t ret = fp[1];
        uintptr_t *next = (uintptr_t *)fp[0];
        if (!ret)
            break;
        ips[n++] = ret;
        if (next <= fp)
            break;
        fp = next;
    }
    return n;
}

/* libunwind, reading only the stack the walk runs on (s), and from a handler on the
   sigaltstack the thread's other known stacks, where its signal frame leads. */
static unsigned libunwind_walk(churn_thread *t, uintptr_t *ips, unsigned max,
                               churn_stack_range s, int kind)
{
    churn_stack_range stacks[CHURN_UNWIND_STACKS] = {s};
    churn_stack_range other[2] = {{churn_stack_lo, churn_stack_hi}, {t->stack_lo, t->stack_hi}};
    unsigned n = 1;
    for (unsigned i = 0; kind == ALT_STACK && i < 2; i++) {
        int apart = other[i].hi - other[i].lo >= 16;
        for (unsigned j = 0; apart && j < n; j++)
            apart = other[i].lo >= stacks[j].hi || other[i].hi <= stacks[j].lo;
        if (apart)
            stacks[n++] = other[i];
    }
    return churn_unwind_checked(&t->unw, ips, max, stacks, n);
}

/* Returns the CFI walker's frames on the stack s, or -1 when it could not be sure of them. */
static int cfi_walk(churn_thread *t, uintptr_t *ips, unsigned max, churn_stack_range s,
                    uint64_t *chain, int lazy)
{
    *chain = 0;
    if (lazy)
        return churn_cfi_backtrace_lazy(&t->cfi, ips, max, s.lo, s.hi, chain);
    return churn_cfi_backtrace(&t->cfi, ips, max, s.lo, s.hi, chain);
}

static unsigned keep(uintptr_t *ips, unsigned n, unsigned max)
{
    n = skip_own_frames(ips, n);
    return n < max ? n : max;
}

/* The stack cut to one frame: the return address into the caller of the way in, the first
   one outside libchurn on the chain of libchurn's own frame pointers (it is built with them),
   read only inside [our frame, top), and only in libchurn's frames.  No frame when the chain
   leads into an allocator's frames first (tcmalloc's hooks), whose frame pointers are not
   known to be kept. */
static unsigned short_walk(uintptr_t *ips, uintptr_t top)
{
    const uintptr_t *fp = __builtin_frame_address(0);
    if (!top)
        top = (uintptr_t)fp + OWN_FRAMES_BYTES;
    atomic_fetch_add_explicit(&short_stacks, 1, memory_order_relaxed);
    while (top >= 16 && (uintptr_t)fp <= top - 16 && !((uintptr_t)fp & 7)) {
        uintptr_t ret = fp[1];
        if (!(ret >= churn_self_lo && ret < churn_self_hi)) {
            if (!ret || own_or_allocator(ret))
                return 0;
            ips[0] = ret;
            return 1;
        }
        const uintptr_t *next = (const uintptr_t *)fp[0];
        if (next <= fp)
            return 0;
        fp = next;
    }
    return 0;
}

static void verify_failed(const uintptr_t *fast, unsigned nf, const uintptr_t *slow, unsigned ns)
{
    unsigned i = 0;
    while (i < nf && i < ns && fast[i] == slow[i])
        i++;
    churn_log("unwind verify: stacks differ at frame %u: the walk's %u frames (%#lx), "
              "libunwind's %u (%#lx)",
              i, nf, i < nf ? (unsigned long)fast[i] : 0ul, ns,
              i < ns ? (unsigned long)slow[i] : 0ul);
    abort();
}

/* Each stack as the walk takes it (the CFI walker, or where it gives up the checked
   libunwind) against libunwind's own local unwinder. */
static unsigned verify_walk(churn_thread *t, uintptr_t *ips, unsigned want, unsigned max,
                            churn_stack_range s, int kind)
{
    uintptr_t slow[256 + OWN];
    int got = unw_backtrace((void **)slow, (int)want);
    unsigned ns = keep(slow, got > 0 ? (unsigned)got : 0, max), n;
    uint64_t chain;
    int nf = cfi_walk(t, ips, want, s, &chain, 0);
    atomic_fetch_add_explicit(&verified, 1, memory_order_relaxed);
    if (nf < 0) {
        n = keep(ips, libunwind_walk(t, ips, want, s, kind), max);
    } else {
        atomic_fetch_add_explicit(&verified_fast, 1, memory_order_relaxed);
        n = keep(ips, (unsigned)nf, max);
        atomic_fetch_add_explicit(&verified_frames, n, memory_order_relaxed);
    }
    if (n != ns)
        verify_failed(ips, n, slow, ns);
    for (unsigned i = 0; i < n; i++)
        if (ips[i] != slow[i])
            verify_failed(ips, n, slow, ns);
    return n;
}

unsigned churn_unwind(uintptr_t *ips, unsigned max, uint64_t *key, int *partial)
{
    unsigned want = max + OWN, n;
    uint64_t chain;
    int got;
    churn_thread *t = churn_thread_current();
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    churn_stack_range s;
    *partial = 0;
    int kind = t ? stack_of(t, sp, &s) : NO_STACK;
    if (CHURN_UNLIKELY(kind == NO_STACK)) {
        n = short_walk(ips, 0);
        *key = churn_stack_hash(ips, n);
        return n;
    }
    uintptr_t room = sp - s.lo;
    switch (churn_opt.unwind) {
    case CHURN_UNWIND_FP:
        n = keep(ips, fp_walk(ips, want, s.hi), max);
        break;
    case CHURN_UNWIND_LIBUNWIND:
        n = room < ROOM_LIBUNWIND ? short_walk(ips, s.hi)
                                  : keep(ips, libunwind_walk(t, ips, want, s, kind), max);
        break;
    case CHURN_UNWIND_VERIFY:
        n = room < ROOM_LIBUNWIND ? short_walk(ips, s.hi)
                                  : verify_walk(t, ips, want, max, s, kind);
        break;
    default:
        if (room < ROOM_CFI) {
            n = short_walk(ips, s.hi);
            break;
        }
        /* Walked to its end where the walk can be remembered, and cut to max after: a stack
           deeper than max was otherwise walked whole every time (workerd: 3 % of walks, a
           third of the frames walked). */
        got = cfi_walk(t, ips, want > CHURN_CFI_MEMO_FRAMES ? want : CHURN_CFI_MEMO_FRAMES, s,
                       &chain, 1);
        /* What the CFI walker gives up on goes to the checked walk on every stack, the
           thread's own included: hostile CFI (an expression dereferencing a wild register)
           ends that walk instead of the program.  Its searches for unwind information are
           kept (unwind_checked.c), which makes it cheap enough for that (deno, whose stacks
           all go through code without unwind tables: docs/benchmarks.md). */
        if (got < 0) {
            n = room < ROOM_LIBUNWIND ? short_walk(ips, s.hi)
                                      : keep(ips, libunwind_walk(t, ips, want, s, kind), max);
            break;
        }
        /* The walk's chain from a frame outwards is the stack's hash when only frames
           inside it are dropped (an allocator's, whose hook called us: tcmalloc's) and the
           rest is within max.  A frame of ours further out (skip_own_frames) leaves the chain
           a hash of frames no kept stack holds: a key of its own, as DEEP_KEY's are.  A stack deeper than max is cut to its inner max frames, which
           the chain does not hash alone: the whole walk's chain keys the cache instead (kept
           apart from stacks' own hashes by DEEP_KEY), so a repeated deep stack is not copied
           and hashed again (under workerd that copy and hash were a quarter of stack_id's
           samples).  churn_unwind_complete writes the frames when the cache misses. */
        if (chain && got) {
            unsigned skip = 0;
            while (skip < (unsigned)got && own_or_allocator(churn_cfi_last_ip(&t->cfi, skip)))
                skip++;
            unsigned rest = (unsigned)got - skip;
            if (rest) {
                *key = churn_stack_hash_chained(churn_cfi_last_chain(&t->cfi, skip), rest);
                if (rest > max)
                    *key ^= DEEP_KEY;
                *partial = 1;
                return rest <= max ? rest : max;
            }
        }
        if (chain)
            churn_cfi_last_walk(&t->cfi, ips);
        n = keep(ips, (unsigned)got, max);
        break;
    }
    *key = churn_stack_hash(ips, n);
    return n;
}

unsigned churn_unwind_complete(uintptr_t *ips, unsigned max, uint64_t *hash)
{
    unsigned n = keep(ips, churn_cfi_last_walk(&churn_thread_current()->cfi, ips), max);
    *hash = churn_stack_hash(ips, n);
    return n;
}

/* The test reads this line: how many stacks were compared, how many the CFI walker took. */
__attribute__((destructor)) static void verify_report(void)
{
    if (churn_opt.unwind == CHURN_UNWIND_VERIFY)
        churn_log("unwind verify: %lu stacks identical, %lu walked by cfi (%lu frames), %lu by "
                  "libunwind alone",
                  (unsigned long)atomic_load(&verified), (unsigned long)atomic_load(&verified_fast),
                  (unsigned long)atomic_load(&verified_frames),
                  (unsigned long)(atomic_load(&verified) - atomic_load(&verified_fast)));
}

/* dlclose may put other code where cached rules were computed; glibc's own internal unloads
   do not come through here, and the walker notices those from the loader's counters the next
   time it looks a new address up.  A library loaded and unloaded between two writer passes
   joins the module map before it goes, or its frames could never be symbolized. */
CHURN_API int dlclose(void *handle)
{
    static int (*real)(void *);
    if (!real) {
        int saved = churn_in_shim;
        churn_in_shim = 1;
        real = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
        churn_in_shim = saved;
        if (!real)
            return -1;
    }
    if (atomic_load(&churn_state) == CHURN_ON) {
        churn_in_shim++;
        churn_modules_scan();
        churn_in_shim--;
    }
    int ret = real(handle);
    churn_cfi_forget();
    churn_unwind_checked_forget();
    if (atomic_load(&churn_state) == CHURN_ON) {
        /* marks what the dlclose unloaded before anything can be loaded in its place */
        churn_in_shim++;
        churn_modules_scan();
        churn_in_shim--;
    }
    return ret;
}
