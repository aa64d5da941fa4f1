/*
 * Stack capture cost: libunwind's unw_backtrace against libchurn's CFI walker (shim/walk/cfi.c,
 * linked in directly), in ns per stack and per frame, at call depths 8/16/32/64.  The
 * recursion is built without frame pointers, like Debian's python3, and mixes a plain frame,
 * a large frame and an alloca'd (rbp-based CFA) frame.  Both unwinders' outputs are compared
 * once per depth first: a benchmark of a wrong answer is worthless.
 *
 * bench/run.sh (`make bench`) builds and runs it: build/bench/unwind_bench
 */
#define UNW_LOCAL_ONLY
#include <alloca.h>
#include <libunwind.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "walk/cfi.h"

#define MAXF 256

static uintptr_t stack_lo, stack_hi;
static volatile int sink;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static churn_cfi_thread cfi_state; /* static: zero-filled, as a first walk needs */

static __attribute__((noinline)) int capture(int which, uintptr_t *ips)
{
    uint64_t chain;
    int n = which ? churn_cfi_backtrace(&cfi_state, ips, MAXF, stack_lo, stack_hi, &chain)
                  : unw_backtrace((void **)ips, MAXF);
    sink += n;
    return n;
}

static void measure(int depth)
{
    uintptr_t a[MAXF], b[MAXF];
    int na = capture(0, a), nb = capture(1, b);
    /* Frames 0 and 1 are the two call sites in capture() and here; the rest must agree. */
    if (nb < 2 || na != nb || memcmp(a + 2, b + 2, (size_t)(na - 2) * sizeof a[0])) {
        fprintf(stderr, "unwind_bench: depth %d: cfi (%d frames) and libunwind (%d) differ\n",
                depth, nb, na);
        exit(1);
    }
    double ns[2];
    enum { ROUNDS = 50000 };
    for (int which = 0; which < 2; which++) {
        uint64_t best = UINT64_MAX;
        for (int rep = 0; rep < 15; rep++) {
            uint64_t t0 = now_ns();
            for (int i = 0; i < ROUNDS; i++)
                capture(which, a);
            uint64_t t = now_ns() - t0;
            if (t < best)
                best = t;
        }
        ns[which] = (double)best / ROUNDS;
    }
    printf("%5d %6d %12.1f %10.2f %12.1f %10.2f %8.1fx\n", depth, na, ns[0], ns[0] / na, ns[1],
           ns[1] / na, ns[0] / ns[1]);
}

static int level(int depth, int target);

static __attribute__((noinline)) int plain(int depth, int target)
{
    return level(depth + 1, target) + 1;
}

static __attribute__((noinline)) int big(int depth, int target)
{
    volatile char buf[600];
    buf[depth % sizeof buf] = (char)depth;
    return level(depth + 1, target) + buf[depth % sizeof buf];
}

static __attribute__((noinline)) int dynamic(int depth, int target)
{
    volatile char *p = alloca(16 + (size_t)depth % 64);
    p[0] = (char)depth;
    return level(depth + 1, target) + p[0];
}

static __attribute__((noinline)) int level(int depth, int target)
{
    if (depth >= target) {
        measure(2 * target); /* two frames per level */
        return 0;
    }
    int r;
    switch (depth % 3) {
    case 0: r = plain(depth, target); break;
    case 1: r = big(depth, target); break;
    default: r = dynamic(depth, target); break;
    }
    __asm__ volatile("" ::: "memory"); /* no tail call: every level keeps its frame */
    return r;
}

int main(void)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) || pthread_attr_getstack(&attr, &addr, &size)) {
        fprintf(stderr, "unwind_bench: cannot read the stack range\n");
        return 1;
    }
    stack_lo = (uintptr_t)addr;
    stack_hi = (uintptr_t)addr + size;
    printf("depth frames libunwind-ns   ns/frame       cfi-ns   ns/frame  speedup\n");
    /* depth = recursion frames; "frames" adds main, libc's start frames and the harness. */
    static const int depths[] = {8, 16, 32, 64};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++)
        sink += level(0, depths[i] / 2);
    return 0;
}
