/*
 * Linked with jemalloc's static library (libjemalloc_pic.a): the executable defines and
 * exports malloc, so the dynamic linker binds every call to it and libchurn's exported malloc
 * is never called.  Checks first that jemalloc really answers (its mallctl and its size
 * classes), then runs the pattern of static_pattern.h.
 */
#include <stdbool.h>

#include "static_pattern.h"

int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

int main(void)
{
    const char *version = NULL;
    size_t len = sizeof version;
    if (mallctl("version", &version, &len, NULL, 0) || !version)
        die("mallctl(\"version\") failed: jemalloc is not linked in");
    void *p = malloc(100);
    size_t usable = malloc_usable_size(p);
    free(p);
    if (usable != 112)
        die("malloc(100) has %zu usable bytes, not jemalloc's 112", usable);
    run_pattern(0);
    printf("allocator jemalloc %s\n", version);
    pattern_print();
    return 0;
}
