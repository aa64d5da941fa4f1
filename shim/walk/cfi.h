/*
 * A DWARF call-frame-information stack walker for x86-64, fast because it caches one small
 * rule per return address (CFA = rsp or rbp + offset, where the caller's rbp was saved) and
 * then costs a few loads a frame.  It answers only when it is sure: any frame it cannot
 * describe that way makes it give up, and the caller uses a general unwinder instead.
 *
 * Self-contained (the benchmark links cfi.c and cfi_parse.c alone): no allocation, no locks
 * of its own; the loader's lock is taken (dl_iterate_phdr) only the first time a return
 * address is seen.
 */
#ifndef CHURN_CFI_H
#define CHURN_CFI_H

#include <stdint.h>

/* A stack's hash is chained from its outermost frame inwards, so that a walk which reuses
   the outer frames of the previous one (see cfi.c) also reuses their hash and only adds its
   own few frames.  CHURN_CHAIN_SEED starts the chain; an empty stack is the seed itself. */
#define CHURN_CHAIN_SEED 0x9e3779b97f4a7c15ull
static inline uint64_t churn_chain_step(uint64_t chain, uintptr_t ip)
{
    chain = (chain ^ ip) * 0xff51afd7ed558ccdull;
    return chain ^ (chain >> 32);
}

/* The deepest walk the thread's state remembers: a walk cut short before its end (by max) is
   not remembered, and the next walk cannot reuse it. */
#define CHURN_CFI_MEMO_FRAMES 96

/* A thread's own walking state (a cache of rules by stack position and its previous walk),
   owned by the caller, never shared: zero-filled or churn_cfi_thread_reset before the
   thread's first walk (a previous walk of another thread must not be taken as its own). */
#define CHURN_CFI_THREAD_BYTES (44u << 10)
typedef struct {
    _Alignas(64) unsigned char bytes[CHURN_CFI_THREAD_BYTES];
} churn_cfi_thread;
void churn_cfi_thread_reset(churn_cfi_thread *ct);
/* Forgets the thread's previous walk and its cache of rules, which a walk abandoned halfway
   (a jump out of a signal handler that interrupted it) may have left half written. */
void churn_cfi_thread_forget(churn_cfi_thread *ct);

/* Walks the calling thread's stack, with ct that thread's state.  ips[0] is the return address into the caller of this
   function, then each caller's return address, innermost first, at most max of them; the
   walk ends where the CFI says the stack ends (undefined return address or rbp) or at a zero
   return address, as libunwind's does, and at a frame whose caller's frame would lie past
   stack_hi (the first frame of a coroutine's stack).  Stack memory is read only inside [the
   current stack pointer, stack_hi); stack_lo only tells that the stack pointer is on this
   stack at all.
   Returns the number of frames, or -1 when some frame cannot be walked this way.  *chain is
   the chain of churn_chain_step over the returned frames, outermost first, or 0 when the
   walk did not keep it (a walk cut short by max); a chain of exactly 0 is reported as not
   kept too. */
int churn_cfi_backtrace(churn_cfi_thread *ct, uintptr_t *ips, unsigned max, uintptr_t stack_lo,
                        uintptr_t stack_hi, uint64_t *chain);

/* The same, except that where *chain is returned non-zero only the walk's own inner frames
   are written to ips: the rest, the previous walk's, are often not needed at all (the
   stack's hash is already known to the caller).  churn_cfi_last_walk then writes all the
   frames, until the thread's next walk. */
int churn_cfi_backtrace_lazy(churn_cfi_thread *ct, uintptr_t *ips, unsigned max,
                             uintptr_t stack_lo, uintptr_t stack_hi, uint64_t *chain);
/* Writes the whole walk, innermost first; returns its number of frames. */
unsigned churn_cfi_last_walk(const churn_cfi_thread *ct, uintptr_t *ips);
/* its frame i from the innermost (0 past the end) */
uintptr_t churn_cfi_last_ip(const churn_cfi_thread *ct, unsigned i);
/* the chain of its frames from i outwards */
uint64_t churn_cfi_last_chain(const churn_cfi_thread *ct, unsigned i);

/* The code that the CFI entry (FDE) holding addr describes, a function as its compiler or
   assembler saw it: [*lo, *hi).  0, or -1 when no CFI describes addr. */
int churn_cfi_function_extent(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);

/* Drops every cached rule: code may have been unloaded and other code loaded in its place. */
void churn_cfi_forget(void);

/* Return addresses in [lo, hi) (the caller's own code, built with frame pointers) are not
   reported: the walk steps over those innermost frames by their frame pointers. */
void churn_cfi_skip_frames_of(uintptr_t lo, uintptr_t hi);

#endif
