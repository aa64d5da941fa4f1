/*
 * dlopen and dlclose while tracing: `dl reuse|apart LIB_A LIB_B` loads library A, allocates
 * A_ALLOCS blocks through its alloc_in_a, unloads it and loads library B, which allocates
 * B_ALLOCS blocks through alloc_in_b; B is unloaded too.  With `reuse` A is gone before B is
 * loaded (the loader usually puts B where A was); with `apart` B is loaded first, so their
 * addresses differ.  The blocks stay live until the end.  Prints `bases A B` (the load
 * addresses) so the test knows whether B took A's.
 */
#define _GNU_SOURCE /* dlinfo */
#include <dlfcn.h>
#include <link.h>

#include "probe.h"

#define A_ALLOCS 5
#define A_SIZE 111
#define B_ALLOCS 7
#define B_SIZE 222

typedef void *(*alloc_fn)(size_t);

static void *load(const char *path, const char *symbol, alloc_fn *fn, uintptr_t *base)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        die("dlopen %s: %s", path, dlerror());
    *fn = (alloc_fn)dlsym(h, symbol);
    struct link_map *map;
    if (!*fn || dlinfo(h, RTLD_DI_LINKMAP, &map))
        die("%s has no %s", path, symbol);
    *base = map->l_addr;
    return h;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "reuse") && strcmp(argv[1], "apart")))
        die("usage: dl reuse|apart LIB_A LIB_B");
    int apart = !strcmp(argv[1], "apart");
    void *a_blocks[A_ALLOCS], *b_blocks[B_ALLOCS];
    alloc_fn fn;
    uintptr_t base_a, base_b;
    phase("a");
    void *ha = load(argv[2], "alloc_in_a", &fn, &base_a);
    for (unsigned i = 0; i < A_ALLOCS; i++)
        if (!(a_blocks[i] = fn(A_SIZE)))
            die("alloc_in_a failed");
    if (!apart && dlclose(ha))
        die("dlclose %s: %s", argv[2], dlerror());
    phase("b");
    void *hb = load(argv[3], "alloc_in_b", &fn, &base_b);
    for (unsigned i = 0; i < B_ALLOCS; i++)
        if (!(b_blocks[i] = fn(B_SIZE)))
            die("alloc_in_b failed");
    if ((apart && dlclose(ha)) || dlclose(hb))
        die("dlclose: %s", dlerror());
    phase("end");
    phases_print();
    printf("bases %lu %lu\n", (unsigned long)base_a, (unsigned long)base_b);
    for (unsigned i = 0; i < A_ALLOCS; i++)
        keep(a_blocks[i]);
    for (unsigned i = 0; i < B_ALLOCS; i++)
        keep(b_blocks[i]);
    return 0;
}
