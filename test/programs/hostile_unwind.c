/*
 * Drives test/programs/hostile_frames.S.
 *
 * `hostile_unwind wild N`: N allocations of each of WILD_KINDS sizes through wild_cfa_alloc,
 * whose CFA rule dereferences r12, with r12 pointing at: the null page, a PROT_NONE page, a
 * non-canonical address, a readable word holding garbage, and a readable word holding the
 * address just past a PROT_NONE page (so the CFA is readable and the return address under it
 * is not).  The blocks are kept; prints "kept N".
 *
 * `hostile_unwind sums N`: N calls each of backedge_sum and far_loop_sum, each call followed
 * by one malloc/free of SUM_SIZE bytes; the sums are checked.  Prints "sums N".
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "probe.h"

void *wild_cfa_alloc(size_t size, uintptr_t wild);
uint64_t backedge_sum(uint64_t n);
uint64_t far_loop_sum(uint64_t n);

#define WILD_KINDS 5
#define WILD_SIZE 700
#define SUM_SIZE 77
#define MAX_N 10000

static void *kept[WILD_KINDS * MAX_N];

static int wild(int n)
{
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *none = mmap(NULL, 2 * (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (none == MAP_FAILED)
        die("mmap failed");
    static uintptr_t garbage = 0x7777777777770, past_none;
    past_none = (uintptr_t)none + 8;
    const uintptr_t values[WILD_KINDS] = {0x10, (uintptr_t)none, 0xdead000000000000u,
                                          (uintptr_t)&garbage, (uintptr_t)&past_none};
    int k = 0;
    for (int v = 0; v < WILD_KINDS; v++)
        for (int i = 0; i < n; i++)
            if (!(kept[k++] = wild_cfa_alloc(WILD_SIZE + (size_t)v, values[v])))
                die("malloc failed");
    for (int i = 0; i < k; i++)
        keep(kept[i]);
    printf("kept %d\n", k);
    return 0;
}

static int sums(int n)
{
    for (int i = 0; i < n; i++) {
        uint64_t k = 10 + (uint64_t)i % 7, want = k * (k + 1) / 2;
        uint64_t got = backedge_sum(k);
        if (got != want)
            die("backedge_sum(%llu) = %llu, not %llu", (unsigned long long)k,
                (unsigned long long)got, (unsigned long long)want);
        void *p = malloc(SUM_SIZE);
        keep(p);
        free(p);
        got = far_loop_sum(k);
        if (got != want)
            die("far_loop_sum(%llu) = %llu, not %llu", (unsigned long long)k,
                (unsigned long long)got, (unsigned long long)want);
        p = malloc(SUM_SIZE);
        keep(p);
        free(p);
    }
    printf("sums %d\n", n);
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc == 3 ? atoi(argv[2]) : 0;
    if (n < 1 || n > MAX_N)
        die("usage: hostile_unwind wild|sums N (N from 1 to %d)", MAX_N);
    if (!strcmp(argv[1], "wild"))
        return wild(n);
    if (!strcmp(argv[1], "sums"))
        return sums(n);
    die("hostile_unwind: wild or sums, not %s", argv[1]);
    return 1;
}
