/* Two stacks that only a saved rbp tells apart (test/t_walk_saved_rbp.sh).  main calls a1 and
   a2 in turn from one call site; each calls b, which calls m, which allocates.  a1 and a2
   take alloca areas of different sizes and b the opposite, so m's frame, its return address
   and everything outside a1's or a2's frame are the same words at the same places in both
   stacks.  a2's larger area, never written, still holds the return address into a1 that b
   left there the time before: every return address the previous walk read is in place, and
   only b's rbp, saved in m's frame, differs.  A walk that reused the previous one's outer
   frames on return addresses alone would put a1 where a2 is. */
#include <alloca.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 2000

static void *blocks[2 * ROUNDS];
static unsigned nblocks;
/* m's frame in every call: the same place, or the stacks differ where any walk sees it */
static void *m_frame;
static int m_moved;
/* volatile: the sizes reach alloca at run time, which keeps rbp the frames' CFA register */
static volatile size_t small_area = 64, large_area = 256;

__attribute__((noinline)) static void m(size_t size)
{
    void *frame = __builtin_frame_address(0);
    m_moved |= m_frame && frame != m_frame;
    m_frame = frame;
    blocks[nblocks++] = malloc(size);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void b(size_t area, size_t size)
{
    char *p = alloca(area);
    __asm__ volatile("" : : "r"(p) : "memory");
    m(size);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void a1(void)
{
    char *p = alloca(small_area);
    __asm__ volatile("" : : "r"(p) : "memory");
    b(large_area, 1111);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void a2(void)
{
    char *p = alloca(large_area);
    __asm__ volatile("" : : "r"(p) : "memory");
    b(small_area, 2222);
    __asm__ volatile("" ::: "memory");
}

static void (*volatile calls[2])(void) = {a1, a2};

/* rounds: a bound known only at run time, so that the loop keeps its one call site */
__attribute__((noinline)) static void run(int rounds)
{
    for (int i = 0; i < 2 * rounds; i++)
        calls[i & 1]();
    __asm__ volatile("" ::: "memory");
}

/* One more frame outside: one more saved rbp the walk compares, so that the one that tells
   the stacks apart sits at the other parity of the walker's comparisons. */
__attribute__((noinline)) static void run_deeper(int rounds)
{
    run(rounds);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1)
        run_deeper(ROUNDS);
    else
        run(ROUNDS);
    for (unsigned i = 0; i < nblocks; i++)
        free(blocks[i]);
    if (m_moved) {
        fprintf(stderr, "stale_rbp: m's frame moved between a1's and a2's stacks: the test "
                        "does not test\n");
        return 1;
    }
    printf("%u blocks, m's frame always at %p\n", nblocks, m_frame);
    return 0;
}
