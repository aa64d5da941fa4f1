/* A library with an allocator of its own, loaded with RTLD_DEEPBIND (t_dlopen.sh): its malloc
   and free bind to its own definitions, which libchurn must leave alone (and say so). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

static char pool[1 << 16];
static size_t used;

void *malloc(size_t n)
{
    size_t at = (used + 15) & ~(size_t)15;
    if (at + n > sizeof pool)
        return NULL;
    used = at + n;
    return pool + at;
}

void free(void *p)
{
    (void)p;
}

static inline void escape(void *p) { __asm__ volatile("" : : "g"(p) : "memory"); }

void deep_churn(int rounds, int keep)
{
    for (int i = 0; i < rounds + keep; i++) {
        void *p = malloc(24);
        escape(p);
        if (i < rounds)
            free(p);
    }
}
