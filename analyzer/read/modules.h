/*
 * The trace's module map as far as reports need it: names by id, the mappings of a pprof
 * profile, and the newest module an ip falls in as the stream goes (which module's debug
 * info to read ahead for a stack just defined).  A frame's module and offset are the
 * symbolizer's (symbolize.h), from the map of its stack's generation, as its names are: after
 * an unload, the newest module at an address may be another library.
 *
 * One entry per module id, the first definition: every segment re-sends the map, and
 * libchurn never reuses an id.  Lookups go through an index of the ranges, rebuilt when a
 * module was added since the last lookup, so that neither many modules nor many frames
 * make a report quadratic.
 */
#ifndef CHURN_MODULES_H
#define CHURN_MODULES_H

#include <stddef.h>
#include <stdint.h>

/* The most modules libchurn records (shim/walk/modules.c): ids are below it. */
#define CHURN_MODULES_MAX 4096

/* A module of the trace's map as reports see it: its range and name (the shim's record of a
   loaded object, with its build id, is shim.h's churn_module). */
typedef struct churn_module_range {
    uint64_t id, bias, start, end;
    char *name; /* basename of the path */
} churn_module_range;

typedef struct churn_module_map {
    churn_module_range *items; /* in the order they were added */
    size_t count, cap;
    size_t *by_id;             /* CHURN_MODULES_MAX entries: item index + 1, 0 unknown */
    /* The index: the ranges' ends, sorted, cut the address space into pieces; owner[i] is
       the newest module covering [bounds[i], bounds[i + 1]) (item index + 1, 0 none). */
    uint64_t *bounds;
    size_t *owner;
    size_t nbounds, indexed; /* indexed: count when it was built */
} churn_module_map;

/* Returns 1 when the module is new, 0 when its id is known (a different definition of a
   known id is ignored, -1), or for an id of CHURN_MODULES_MAX or more (-1). */
int churn_module_map_add(churn_module_map *m, uint64_t id, uint64_t bias, uint64_t start,
                         uint64_t end, const char *path);

/* The most recently added module containing ip, or NULL. */
const churn_module_range *churn_module_map_find(const churn_module_map *m, uint64_t ip);

void churn_module_map_free(churn_module_map *m);

#endif
