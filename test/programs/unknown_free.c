/*
 * Frees of memory the shim never saw allocated: `unknown_free K` takes libc's own malloc
 * straight from libc.so.6 (a dlsym on libc's handle skips the preloaded shim), then frees K
 * such blocks with the ordinary free() and reallocs one more with the ordinary realloc().
 * The shim must pass them on without crashing and count K + 1 unknown frees (the realloc's
 * old block is one); the realloc's new block is a normal allocation.  K = 0 is the control
 * run that does nothing in the measured epoch.
 */
#include <dlfcn.h>

#include "probe.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: unknown_free K\n");
        return 2;
    }
    int k = atoi(argv[1]);
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    void *(*libc_malloc)(size_t) = libc ? (void *(*)(size_t))dlsym(libc, "malloc") : NULL;
    if (!libc_malloc)
        die("cannot find libc's malloc: %s", dlerror());
    void *unseen[16];
    if (k < 0 || k > 16)
        die("K must be 0..16");
    for (int i = 0; i < k; i++) {
        unseen[i] = libc_malloc(64);
        if (!unseen[i])
            die("libc malloc failed");
        fill(unseen[i], 64, (unsigned)i);
    }
    unsigned char *grown = k ? libc_malloc(32) : NULL;
    if (k && !grown)
        die("libc malloc failed");
    if (grown)
        fill(grown, 32, 99);

    phase("unknown");
    for (int i = 0; i < k; i++) {
        if (!filled(unseen[i], 64, (unsigned)i))
            die("block %d was overwritten", i);
        free(unseen[i]);
    }
    if (grown) {
        grown = realloc(grown, 96);
        if (!grown || !filled(grown, 32, 99))
            die("realloc of a block the shim never saw lost its contents");
        free(grown);
    }
    phase("end");
    phases_print();
    return 0;
}
