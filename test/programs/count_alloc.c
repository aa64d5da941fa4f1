/*
 * A shared library preloaded after libchurn (t_overflow_longjmp.sh): it sits between libchurn
 * and glibc, so it sees every malloc and free that reaches the allocator, traced or not.  It
 * counts the mallocs of COUNTED_SIZE bytes and the frees of the blocks they returned, and
 * prints "allocator saw N mallocs and N frees of COUNTED_SIZE bytes" on stderr at exit.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COUNTED_SIZE 1000
#define LIVE 64

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

static _Atomic unsigned long mallocs, frees;
static void *_Atomic live[LIVE]; /* the counted blocks not yet freed */

void *malloc(size_t size)
{
    void *p = __libc_malloc(size);
    if (size == COUNTED_SIZE && p) {
        atomic_fetch_add(&mallocs, 1);
        for (unsigned i = 0; i < LIVE; i++) {
            void *empty = NULL;
            if (atomic_compare_exchange_strong(&live[i], &empty, p))
                break;
        }
    }
    return p;
}

void free(void *p)
{
    for (unsigned i = 0; p && i < LIVE; i++) {
        void *was = p;
        if (atomic_compare_exchange_strong(&live[i], &was, NULL)) {
            atomic_fetch_add(&frees, 1);
            break;
        }
    }
    __libc_free(p);
}

__attribute__((destructor)) static void report(void)
{
    char line[128];
    int n = snprintf(line, sizeof line, "allocator saw %lu mallocs and %lu frees of %d bytes\n",
                     atomic_load(&mallocs), atomic_load(&frees), COUNTED_SIZE);
    if (write(2, line, (size_t)n) != n)
        _exit(3);
}
