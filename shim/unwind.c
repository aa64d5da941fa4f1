/*
 * Stack capture: raw instruction pointers only, symbolized later offline.
 *
 * libunwind's unw_backtrace walks DWARF CFI with a per-IP cache, so it is right for code built
 * without frame pointers; the frame-pointer walk (CHURN_UNWIND=fp) is a few loads a frame, for
 * programs that keep them.  Frames inside libchurn itself are dropped from the top.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "shim.h"

void churn_unwind_init(void)
{
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

static unsigned skip_own_frames(uintptr_t *ips, unsigned n)
{
    unsigned skip = 0;
    while (skip < n && ips[skip] >= churn_self_lo && ips[skip] < churn_self_hi)
        skip++;
    if (skip)
        for (unsigned i = skip; i < n; i++)
            ips[i - skip] = ips[i];
    return n - skip;
}

/* Follows saved %rbp links while they stay inside this thread's stack and move outwards;
   the first frame (the caller of the intercepted function) is taken from our own frame. */
static unsigned fp_walk(uintptr_t *ips, unsigned max)
{
    churn_thread *t = churn_thread_self();
    uintptr_t lo = t ? t->stack_lo : 0, hi = t ? t->stack_hi : 0;
    uintptr_t *fp = __builtin_frame_address(0);
    unsigned n = 0;
    while (n < max && (uintptr_t)fp >= lo && (uintptr_t)fp + 16 <= hi && !((uintptr_t)fp & 7)) {
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

unsigned churn_unwind(uintptr_t *ips, unsigned max)
{
    /* Room for libchurn's own frames on top of the requested depth. */
    enum { OWN = 8 };
    unsigned want = max + OWN;
    unsigned n;
    if (churn_opt.unwind_fp)
        n = fp_walk(ips, want);
    else {
        int got = unw_backtrace((void **)ips, (int)want);
        n = got > 0 ? (unsigned)got : 0;
    }
    n = skip_own_frames(ips, n);
    return n < max ? n : max;
}
