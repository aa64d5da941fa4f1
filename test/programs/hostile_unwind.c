/*
 * Drives test/programs/hostile_frames.S.
 *
 * `hostile_unwind wild N`: N allocations of each of WILD_KINDS sizes through wild_cfa_alloc,
 * whose CFA rule dereferences r12, with r12 pointing at: the null page, a PROT_NONE page, a
 * non-canonical address, a readable word holding garbage, and a readable word holding the
 * address just past a PROT_NONE page (so the CFA is readable and the return address under it
 * is not).  The blocks are kept; prints "kept N".
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "probe.h"

void *wild_cfa_alloc(size_t size, uintptr_t wild);

#define WILD_KINDS 5
#define WILD_SIZE 700
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

int main(int argc, char **argv)
{
    int n = argc == 3 ? atoi(argv[2]) : 0;
    if (n < 1 || n > MAX_N)
        die("usage: hostile_unwind wild N (N from 1 to %d)", MAX_N);
    if (!strcmp(argv[1], "wild"))
        return wild(n);
    die("hostile_unwind: wild, not %s", argv[1]);
    return 1;
}
