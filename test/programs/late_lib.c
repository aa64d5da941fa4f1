/*
 * A library whose heap work ends after libchurn's own destructor: it is initialised before
 * libchurn (it is a dependency of the program, libchurn a preload), so its destructor runs
 * after libchurn's, and an atexit handler it registers from its constructor runs after every
 * destructor.  LATE_BLOCKS blocks of LATE_SIZE bytes are freed by each.
 */
#include <stdlib.h>

#define LATE_BLOCKS 999
#define LATE_SIZE 100

static void *by_destructor[LATE_BLOCKS], *by_atexit[LATE_BLOCKS];

static void late_lib_atexit(void)
{
    for (unsigned i = 0; i < LATE_BLOCKS; i++)
        free(by_atexit[i]);
}

__attribute__((constructor)) static void late_lib_init(void)
{
    for (unsigned i = 0; i < LATE_BLOCKS; i++) {
        by_destructor[i] = malloc(LATE_SIZE);
        by_atexit[i] = malloc(LATE_SIZE);
    }
    atexit(late_lib_atexit);
}

__attribute__((destructor)) static void late_lib_fini(void)
{
    for (unsigned i = 0; i < LATE_BLOCKS; i++)
        free(by_destructor[i]);
}

int late_lib_linked(void)
{
    return LATE_BLOCKS;
}
