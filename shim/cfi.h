/*
 * A DWARF call-frame-information stack walker for x86-64, fast because it caches one small
 * rule per return address (CFA = rsp or rbp + offset, where the caller's rbp was saved) and
 * then costs a few loads a frame.  It answers only when it is sure: any frame it cannot
 * describe that way makes it give up, and the caller uses a general unwinder instead.
 *
 * Self-contained (the benchmark links it alone): no allocation, no locks of its own; the
 * loader's lock is taken (dl_iterate_phdr) only the first time a return address is seen.
 */
#ifndef CHURN_CFI_H
#define CHURN_CFI_H

#include <stdint.h>

/* Walks the calling thread's stack.  ips[0] is the return address into the caller of this
   function, then each caller's return address, innermost first, at most max of them; the
   walk ends where the CFI says the stack ends (undefined return address or rbp) or at a zero
   return address, as libunwind's does.  Stack memory is read only inside [the current stack
   pointer, stack_hi); stack_lo only tells that the stack pointer is on this stack at all.
   Returns the number of frames, or -1 when some frame cannot be walked this way. */
int churn_cfi_backtrace(uintptr_t *ips, unsigned max, uintptr_t stack_lo, uintptr_t stack_hi);

/* Drops every cached rule: code may have been unloaded and other code loaded in its place. */
void churn_cfi_forget(void);

/* Return addresses in [lo, hi) (the caller's own code, built with frame pointers) are not
   reported: the walk steps over those innermost frames by their frame pointers. */
void churn_cfi_skip_frames_of(uintptr_t lo, uintptr_t hi);

#endif
