/*
 * A library that dlopens another by a bare name found only through its own RUNPATH
 * ($ORIGIN/runpath, test/programs/dl_runpath_lib.c): the program loads the library by its
 * path and asks it to open its leaf, plainly and with RTLD_DEEPBIND (two leaves, so that each
 * load searches).  Natively both succeed.  Each leaf allocates LEAF_KEEP blocks it keeps, and
 * makes ROUNDS allocations it frees (malloc, and strdup's inside libc).  Prints `plain: V`
 * and `deep: V` (V the leaf's value, or the loader's error), then `done`.
 * Usage: dl_runpath LIB
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    const char *(*open_leaf)(const char *, int, int *) =
        (const char *(*)(const char *, int, int *))dlsym(lib, "open_leaf");
    if (!open_leaf)
        return 1;
    int value;
    const char *error = open_leaf("libchurn_leaf_plain.so", RTLD_NOW, &value);
    error ? printf("plain: %s\n", error) : printf("plain: %d\n", value);
    error = open_leaf("libchurn_leaf_deep.so", RTLD_NOW | RTLD_DEEPBIND, &value);
    error ? printf("deep: %s\n", error) : printf("deep: %d\n", value);
    printf("done\n");
    return 0;
}
