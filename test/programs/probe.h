/*
 * Shared by the test programs.  Each program runs a known allocation pattern under the shim,
 * checks its own results (exit 1 with one line on stderr when the shim broke them) and, once
 * measuring is over, prints one `phase NAME EPOCH` line per measured phase so the test can find
 * the epoch of each phase in the analyzer's report.  Nothing is printed while measuring because
 * stdio allocates its buffer on first use.
 */
#ifndef PROBE_H
#define PROBE_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"

#define PROBE_MAX_PHASES 64

struct probe_phase {
    char name[32];
    uint64_t epoch;
};

static struct probe_phase probe_phases[PROBE_MAX_PHASES];
static int probe_phase_count;

/* Makes the pointer escape so the compiler cannot drop a malloc/free pair it deems unused. */
static inline void keep(const void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

static inline void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* Starts an epoch for the named phase; it lasts until the next phase() call. */
static inline uint64_t phase(const char *name)
{
    if (probe_phase_count == PROBE_MAX_PHASES)
        die("too many phases");
    struct probe_phase *p = &probe_phases[probe_phase_count++];
    size_t len = strlen(name);
    if (len >= sizeof p->name)
        die("phase name too long: %s", name);
    memcpy(p->name, name, len + 1);
    p->epoch = churn_epoch_begin();
    return p->epoch;
}

/* phase() with a numbered name, e.g. phase_numbered("step", 3) -> "step3", without stdio. */
static inline uint64_t phase_numbered(const char *prefix, unsigned n)
{
    char name[32];
    size_t len = strlen(prefix);
    char digits[12];
    int d = 0;
    do {
        digits[d++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    if (len + (size_t)d >= sizeof name)
        die("phase name too long: %s", prefix);
    memcpy(name, prefix, len);
    while (d)
        name[len++] = digits[--d];
    name[len] = '\0';
    return phase(name);
}

static inline void phases_print(void)
{
    for (int i = 0; i < probe_phase_count; i++)
        printf("phase %s %llu\n", probe_phases[i].name,
               (unsigned long long)probe_phases[i].epoch);
}

/* Fills a block with a pattern derived from its tag, and checks it later. */
static inline void fill(void *p, size_t n, unsigned tag)
{
    unsigned char *b = (unsigned char *)p;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(tag * 31u + i);
}

static inline int filled(const void *p, size_t n, unsigned tag)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)(tag * 31u + i))
            return 0;
    return 1;
}

#endif
