/* A library meant to be loaded with RTLD_DEEPBIND (test/programs/deepbind.c): its own malloc
   and free calls, and strdup's block (allocated inside libc, which binds to the preloaded
   allocator) freed by the library's own free. */
#include <stdlib.h>
#include <string.h>

void *deep_kept[64];

/* the compiler may not drop a malloc/free pair whose block escapes */
static inline void escape(void *p) { __asm__ volatile("" : : "g"(p) : "memory"); }

__attribute__((noinline)) void deep_churn(int rounds, int keep)
{
    for (int i = 0; i < rounds; i++) {
        char *p = malloc(24 + (size_t)(i % 7));
        escape(p);
        free(p);
        char *s = strdup("a string copied inside libc");
        free(s);
    }
    for (int i = 0; i < keep && i < 64; i++)
        deep_kept[i] = malloc(100);
}
