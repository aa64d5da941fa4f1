/*
 * The trace's module map as far as reports need it: which module an ip falls in, so an ip
 * without symbols can still be printed as module+offset.  Symbol lookup itself is the
 * symbolizer's (symbolize.h); this only keeps ranges and names.
 */
#ifndef CHURN_MODULES_H
#define CHURN_MODULES_H

#include <stddef.h>
#include <stdint.h>

typedef struct churn_module {
    uint64_t id, bias, start, end;
    char *name; /* basename of the path */
} churn_module;

typedef struct churn_modules {
    churn_module *items;
    size_t count, cap;
} churn_modules;

/* Returns 1 when (id, bias, range, path) is new or changed, 0 when already known. */
int churn_modules_add(churn_modules *m, uint64_t id, uint64_t bias, uint64_t start,
                      uint64_t end, const char *path);

/* The most recently added module containing ip, or NULL. */
const churn_module *churn_modules_find(const churn_modules *m, uint64_t ip);

void churn_modules_free(churn_modules *m);

#endif
