/*
 * dlopen and dlclose while tracing: `dl reuse|apart|moved LIB_A LIB_B` loads library A,
 * allocates A_ALLOCS blocks through its alloc_in_a, unloads it and loads library B, which
 * allocates B_ALLOCS blocks through alloc_in_b; B is unloaded too.  With `reuse` A is gone
 * before B is loaded (the loader usually puts B where A was); with `apart` B is loaded first,
 * so their addresses differ.  `moved` is `reuse` for a library B linked at MOVED_VADDR: the
 * range there is taken first, so the loader's hint fails and B usually lands where A was
 * with another bias (load address minus link address).  `seen` is `reuse` with A in the module
 * map before its allocations (a dlclose of the program's own handle makes libchurn look): its
 * stacks then count A among the modules known, as many as when A's unload is noticed.  The
 * blocks stay live until the end.
 * Prints `bases A B` (the biases) and `starts A B` (where each was mapped) so the test knows
 * whether B took A's place.
 */
#define _GNU_SOURCE /* dlinfo */
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>

#include "probe.h"

#define A_ALLOCS 5
#define A_SIZE 111
#define B_ALLOCS 7
#define B_SIZE 222
#define MOVED_VADDR 0x10000000ul /* -Wl,-Ttext-segment of library B in test/t_dlopen.sh */

typedef void *(*alloc_fn)(size_t);

static void *load(const char *path, const char *symbol, alloc_fn *fn, uintptr_t *base,
                  uintptr_t *start)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        die("dlopen %s: %s", path, dlerror());
    *fn = (alloc_fn)dlsym(h, symbol);
    struct link_map *map;
    Dl_info info;
    if (!*fn || dlinfo(h, RTLD_DI_LINKMAP, &map) || !dladdr((void *)*fn, &info))
        die("%s has no %s", path, symbol);
    *base = map->l_addr;
    *start = (uintptr_t)info.dli_fbase;
    return h;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "reuse") && strcmp(argv[1], "apart") &&
                      strcmp(argv[1], "moved") && strcmp(argv[1], "seen")))
        die("usage: dl reuse|apart|moved|seen LIB_A LIB_B");
    int apart = !strcmp(argv[1], "apart");
    if (!strcmp(argv[1], "moved") &&
        mmap((void *)MOVED_VADDR, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
             -1, 0) != (void *)MOVED_VADDR)
        die("cannot take the range at %#lx", MOVED_VADDR);
    void *a_blocks[A_ALLOCS], *b_blocks[B_ALLOCS];
    alloc_fn fn;
    uintptr_t base_a, base_b, start_a, start_b;
    phase("a");
    void *ha = load(argv[2], "alloc_in_a", &fn, &base_a, &start_a);
    if (!strcmp(argv[1], "seen") && dlclose(dlopen(NULL, RTLD_NOW)))
        die("dlclose of the program's handle: %s", dlerror());
    for (unsigned i = 0; i < A_ALLOCS; i++)
        if (!(a_blocks[i] = fn(A_SIZE)))
            die("alloc_in_a failed");
    if (!apart && dlclose(ha))
        die("dlclose %s: %s", argv[2], dlerror());
    phase("b");
    void *hb = load(argv[3], "alloc_in_b", &fn, &base_b, &start_b);
    for (unsigned i = 0; i < B_ALLOCS; i++)
        if (!(b_blocks[i] = fn(B_SIZE)))
            die("alloc_in_b failed");
    if ((apart && dlclose(ha)) || dlclose(hb))
        die("dlclose: %s", dlerror());
    phase("end");
    phases_print();
    printf("bases %lu %lu\n", (unsigned long)base_a, (unsigned long)base_b);
    printf("starts %lu %lu\n", (unsigned long)start_a, (unsigned long)start_b);
    for (unsigned i = 0; i < A_ALLOCS; i++)
        keep(a_blocks[i]);
    for (unsigned i = 0; i < B_ALLOCS; i++)
        keep(b_blocks[i]);
    return 0;
}
