/* Allocator wrappers inlined into their callers at -O2 (test/t_referee.sh): one-line
   wrappers around malloc, calloc and realloc, inlined twice over, used for temporaries (freed
   at once), a realloc chain, and 3 blocks left live at exit. */
#include <stdlib.h>
#include <string.h>

static inline __attribute__((always_inline)) void *allocate_something(size_t n)
{
    return malloc(n);
}

static inline __attribute__((always_inline)) void *make_zeroed(size_t n)
{
    return calloc(1, n);
}

static inline __attribute__((always_inline)) void *grow(void *p, size_t n)
{
    return realloc(p, n);
}

static inline __attribute__((always_inline)) void *named_block(size_t n)
{
    return allocate_something(n + 8);
}

static inline void escape(void *p) { __asm__ volatile("" : : "g"(p) : "memory"); }

void *kept[3];

int main(void)
{
    for (int i = 0; i < 2000; i++) {
        char *t = allocate_something(32 + (size_t)(i % 5));
        escape(t);
        free(t);
        char *z = make_zeroed(64);
        escape(z);
        free(z);
    }
    char *chain = NULL;
    for (size_t n = 16; n <= 16384; n *= 2) {
        chain = grow(chain, n);
        memset(chain, 1, n);
    }
    free(chain);
    for (int i = 0; i < 3; i++)
        kept[i] = named_block(100 * (size_t)(i + 1));
    return 0;
}
