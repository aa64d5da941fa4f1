/*
 * Built twice: as the library of test/programs/dl_runpath.c (with a RUNPATH), whose
 * open_leaf dlopens a leaf by a bare name; and with -DLEAF as that leaf, which allocates.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 100
#define LEAF_KEEP 10

#ifdef LEAF
void *leaf_kept[LEAF_KEEP];

/* the compiler may not drop a malloc/free pair whose block escapes */
static inline void escape(void *p)
{
    __asm__ volatile("" : : "g"(p) : "memory");
}

__attribute__((noinline)) int leaf_work(void)
{
    for (int i = 0; i < ROUNDS; i++) {
        char *p = malloc(40 + (size_t)(i % 5));
        escape(p);
        free(p);
        char *s = strdup("copied inside libc, freed by the leaf");
        free(s);
    }
    for (int i = 0; i < LEAF_KEEP; i++)
        leaf_kept[i] = malloc(200);
    return 42;
}
#else
/* NULL and *value the leaf's work, or the loader's error. */
const char *open_leaf(const char *name, int flags, int *value)
{
    void *leaf = dlopen(name, flags);
    if (!leaf)
        return dlerror();
    int (*work)(void) = (int (*)(void))dlsym(leaf, "leaf_work");
    if (!work)
        return "no leaf_work";
    *value = work();
    return NULL;
}
#endif
