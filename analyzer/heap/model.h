/*
 * Allocator models: where an object of a given address and usable size sits in the
 * allocator's own units of memory (spans, slabs, pages), so that the bytes those units hold
 * can be counted from the live set alone (docs/fragmentation.md).  Each model is a few
 * measured facts (../shared/guide/allocators.md): page size, which objects share a unit,
 * and how to find a unit's start from an address.
 */
#ifndef CHURN_MODEL_H
#define CHURN_MODEL_H

#include <stddef.h>
#include <stdint.h>

enum churn_model_kind {
    CHURN_MODEL_NONE = 0,   /* no fragmentation estimate */
    CHURN_MODEL_PAGE,       /* any allocator: the pages an object touches */
    CHURN_MODEL_GLIBC,      /* 4 KiB pages, a chunk's size field in front of the object */
    CHURN_MODEL_GPERFTOOLS, /* 8 KiB pages, 1-page spans for every class up to 1 KiB */
    CHURN_MODEL_TCMALLOC,   /* Google tcmalloc: 8 KiB pages, spans from its size classes */
    CHURN_MODEL_JEMALLOC,   /* slabs of lcm(size, page), start computable from the address */
};

#define CHURN_MODEL_MAX_CLASSES 256

typedef struct churn_model {
    enum churn_model_kind kind;
    uint64_t page;          /* the unit of pages this model counts in */
    /* the allocator's classes as recorded (CHURN_REC_SIZE_CLASSES), sorted by size */
    size_t nclasses;
    uint64_t class_size[CHURN_MODEL_MAX_CLASSES], class_span[CHURN_MODEL_MAX_CLASSES];
} churn_model;

/* Where an object's bytes go: up to two units shared with other objects (key = the unit's
   start, its size, and the object's weight in it, the bytes it occupies there), and whole
   pages of its own. */
typedef struct churn_placement {
    int n;
    uint64_t key[2], span_bytes[2], weight[2];
    uint64_t owned;
} churn_placement;

/* The model named by --model (none, page, page:BYTES, glibc, gperftools, tcmalloc,
   jemalloc, jemalloc:PAGE); returns 0 on an unknown name. */
int churn_model_parse(const char *name, churn_model *m);

/* The model for the allocator a trace names (CHURN_REC_ALLOCATOR); unknown ones get pages. */
void churn_model_for_allocator(const char *name, uint64_t page_size, churn_model *m);

/* The recorded size classes (pairs of size and span bytes). */
void churn_model_set_classes(churn_model *m, const uint64_t *sizes, const uint64_t *spans,
                             size_t n);

const char *churn_model_name(const churn_model *m);

void churn_model_place(const churn_model *m, uint64_t addr, uint64_t usable,
                       churn_placement *out);

#endif
