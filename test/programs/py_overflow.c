/*
 * A stack overflow inside Python's allocator, caught by a SIGSEGV handler on a sigaltstack
 * that siglongjmps back, as overflow_longjmp.c does with malloc.  Loaded by py_overflow.py
 * through ctypes.PyDLL, which holds the GIL: `overflows(ROUNDS)` recurses, each level
 * touching FRAME bytes of its own and allocating and freeing LEVEL_SIZE bytes through
 * PyObject_Malloc and PyObject_Free (pymalloc's, through libchurn's hooks when traced), until
 * the stack ends, ROUNDS times, each from a little deeper, and after each overflow allocates
 * and frees AFTER blocks through malloc before Python runs again; it answers the levels whose
 * block was allocated, and `after()` the blocks allocated after the overflows.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

#define FRAME 16
#define LEVEL_SIZE 100 /* served from pymalloc's pools */

static sigjmp_buf env;
static void *(*py_malloc)(size_t);
static void (*py_free)(void *);
static char altstack[64 * 1024];
static long levels, made_after;
static volatile unsigned no_limit = ~0u; /* never reached: the stack ends first */

#define AFTER 100000

static void on_segv(int sig)
{
    (void)sig;
    siglongjmp(env, 1);
}

static __attribute__((noinline)) void recurse(unsigned depth)
{
    volatile char pad[FRAME];
    pad[0] = (char)depth;
    pad[FRAME - 1] = (char)depth;
    void *p = py_malloc(LEVEL_SIZE);
    if (p) {
        levels++;
        py_free(p);
    }
    if (depth < no_limit)
        recurse(depth + 1);
    keep((const void *)pad); /* after the call: not a tail call */
}

/* Round i starts 16 * i bytes deeper: the stack then ends at another instruction of a level
   each round, inside the allocator's call in some. */
static __attribute__((noinline)) void shifted(int i)
{
    volatile char *room = __builtin_alloca(16 + 16 * (size_t)i);
    room[0] = 0;
    recurse(0);
}

long overflows(int rounds)
{
    py_malloc = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "PyObject_Malloc");
    py_free = (void (*)(void *))dlsym(RTLD_DEFAULT, "PyObject_Free");
    if (!py_malloc || !py_free)
        return -1;
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sa.sa_flags = SA_ONSTACK | SA_NODEFER;
    if (sigaltstack(&ss, NULL) || sigaction(SIGSEGV, &sa, &old))
        return -1;
    for (volatile int i = 0; i < rounds; i++) {
        if (!sigsetjmp(env, 1))
            shifted(i);
        for (int k = 0; k < AFTER; k++) {
            void *p = malloc(1000);
            made_after += p != NULL;
            free(p);
        }
    }
    sigaction(SIGSEGV, &old, NULL);
    return levels;
}

long after(void)
{
    return made_after;
}
