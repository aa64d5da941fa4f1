/*
 * A library opened by a relative path: `rel_dlopen DIR LIB` changes to DIR, loads "./LIB"
 * (test/programs/dl_lib.c, whose alloc_in_a allocates), keeps REL_ALLOCS of its blocks live,
 * and changes to / before it ends: the loader knows the library as "./LIB", and no directory
 * the program ends in (nor the one it is analyzed in) holds it.
 */
#include <dlfcn.h>
#include <unistd.h>

#include "probe.h"

#define REL_ALLOCS 9

int main(int argc, char **argv)
{
    if (argc != 3)
        die("usage: rel_dlopen DIR LIB");
    if (chdir(argv[1]) != 0)
        die("cannot change to %s", argv[1]);
    char name[4096];
    snprintf(name, sizeof name, "./%s", argv[2]);
    void *h = dlopen(name, RTLD_NOW);
    if (!h)
        die("dlopen %s: %s", name, dlerror());
    void *(*alloc_in_a)(size_t) = (void *(*)(size_t))dlsym(h, "alloc_in_a");
    if (!alloc_in_a)
        die("%s has no alloc_in_a", name);
    static void *blocks[REL_ALLOCS];
    for (int i = 0; i < REL_ALLOCS; i++)
        keep(blocks[i] = alloc_in_a(123));
    if (chdir("/") != 0)
        die("cannot change to /");
    return 0;
}
