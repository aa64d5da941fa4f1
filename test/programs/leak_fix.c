/*
 * One program before and after a fix, for `churn-analyze --diff`: built plain it leaks,
 * with -DFIXED it does not.  Each of EPOCHS epochs (churn_epoch_begin) handles one request:
 * remember() keeps a 4000-byte record of it (the leak: the fixed build frees the record at
 * the end of the request), parse() allocates a 1000-byte temporary and frees it, and
 * cache_put() replaces one of 8 cache entries of 256 bytes.  So the leaky build's remember()
 * grows by exactly 4000 bytes per epoch and ends with EPOCHS records live; the fixed build's
 * by 0; every other figure is the same in both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"

#define EPOCHS 60
#define RECORD 4000
#define TEMP 1000
#define ENTRY 256
#define ENTRIES 8

static void *records[EPOCHS];
static void *cache[ENTRIES];

static void *must(void *p)
{
    if (!p) {
        fputs("leak_fix: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

static __attribute__((noinline)) void *remember(int request)
{
    char *r = must(malloc(RECORD));
    memset(r, request, RECORD);
    records[request] = r;
    return r;
}

static __attribute__((noinline)) int parse(int request)
{
    char *t = must(malloc(TEMP));
    memset(t, request, TEMP);
    int sum = t[request % TEMP];
    free(t);
    return sum;
}

static __attribute__((noinline)) void cache_put(int request)
{
    free(cache[request % ENTRIES]);
    cache[request % ENTRIES] = must(calloc(1, ENTRY));
}

static __attribute__((noinline)) void handle_request(int request)
{
    char *r = remember(request);
    if (parse(request) != (char)request)
        exit(2);
    cache_put(request);
#ifdef FIXED
    free(r);
    records[request] = NULL;
#else
    (void)r;
#endif
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    for (int i = 0; i < EPOCHS; i++) {
        churn_epoch_begin();
        handle_request(i);
    }
    printf("handled %d requests\n", EPOCHS);
    return 0;
}
