/*
 * Loads a library that links mimalloc (named_dl_lib.c) with dlopen, after libchurn started,
 * and allocates through it: the library and mimalloc are new to the process, and their
 * allocations must be traced from the dlopen on (shim/ways/way_named.c), exactly.
 */
#include <dlfcn.h>

#include "static_pattern.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: named_dl LIBRARY");
    phase("load");
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        die("dlopen: %s", dlerror());
    void *(*lib_alloc)(size_t) = (void *(*)(size_t))dlsym(h, "lib_alloc");
    void (*lib_free)(void *) = (void (*)(void *))dlsym(h, "lib_free");
    if (!lib_alloc || !lib_free)
        die("dlsym: %s", dlerror());
    void *b[1000];
    phase("named");
    for (unsigned i = 0; i < 1000; i++) {
        b[i] = lib_alloc(4096);
        if (!b[i])
            die("lib_alloc failed");
        fill(b[i], 4096, i);
    }
    for (unsigned i = 0; i < 1000; i++) {
        if (!filled(b[i], 4096, i))
            die("block overwritten");
        lib_free(b[i]);
    }
    expect_phase("named", 1000, 1000, 4096000L, 4096000L, 0, 0);
    phase("leak");
    for (unsigned i = 0; i < 3; i++)
        b[i] = lib_alloc(77);
    expect_phase("leak", 3, 0, 231, 0, 3, 231);
    phase("free_leaked");
    for (unsigned i = 0; i < 3; i++)
        lib_free(b[i]);
    expect_phase("free_leaked", 0, 3, 0, 231, -3, -231);
    churn_epoch_begin();
    pattern_print();
    return 0;
}
