#include "heap/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest small class of jemalloc 5 for a page size: 3.5 pages (14336 B with 4 KiB pages);
   anything larger has an extent of its own. */
static uint64_t jemalloc_small_max(uint64_t page)
{
    return 4 * page - page / 2;
}

/* glibc, gperftools and Google tcmalloc: their largest size class; above it an object has
   pages of its own, which page_range counts right anyway. */
#define TCMALLOC_PAGE 8192u

static int is_pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

int churn_model_parse(const char *name, churn_model *m)
{
    memset(m, 0, sizeof *m);
    const char *colon = strchr(name, ':');
    size_t len = colon ? (size_t)(colon - name) : strlen(name);
    uint64_t page = 0;
    if (colon) {
        char *end;
        page = strtoull(colon + 1, &end, 10);
        if (*end || !is_pow2(page) || page < 16 || page > (1u << 30))
            return 0;
    }
    static const struct { const char *name; enum churn_model_kind kind; uint64_t page; } known[] = {
        {"none", CHURN_MODEL_NONE, 0},
        {"page", CHURN_MODEL_PAGE, 4096},
        {"glibc", CHURN_MODEL_GLIBC, 4096},
        {"gperftools", CHURN_MODEL_GPERFTOOLS, TCMALLOC_PAGE},
        {"tcmalloc", CHURN_MODEL_TCMALLOC, TCMALLOC_PAGE},
        {"jemalloc", CHURN_MODEL_JEMALLOC, 4096},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        if (strlen(known[i].name) != len || strncmp(known[i].name, name, len))
            continue;
        int takes_page = known[i].kind == CHURN_MODEL_PAGE || known[i].kind == CHURN_MODEL_JEMALLOC;
        if (colon && !takes_page)
            return 0;
        m->kind = known[i].kind;
        m->page = page ? page : known[i].page;
        return 1;
    }
    return 0;
}

void churn_model_for_allocator(const char *name, uint64_t page_size, churn_model *m)
{
    memset(m, 0, sizeof *m);
    m->page = is_pow2(page_size) && page_size >= 16 && page_size <= (1u << 30) ? page_size : 4096;
    /* The model is the first allocator's: the name may go on with the others traced, " [...]". */
    char first[64];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(name, " "), name);
    name = first;
    if (!strcmp(name, "glibc")) {
        m->kind = CHURN_MODEL_GLIBC;
        m->page = 4096;
    } else if (!strcmp(name, "gperftools")) {
        m->kind = CHURN_MODEL_GPERFTOOLS;
        m->page = TCMALLOC_PAGE;
    } else if (!strncmp(name, "tcmalloc", 8)) {
        m->kind = CHURN_MODEL_TCMALLOC;
        m->page = TCMALLOC_PAGE;
    } else if (!strcmp(name, "jemalloc")) {
        m->kind = CHURN_MODEL_JEMALLOC;
    } else {
        m->kind = CHURN_MODEL_PAGE;
    }
}

void churn_model_set_classes(churn_model *m, const uint64_t *sizes, const uint64_t *spans,
                             size_t n)
{
    m->nclasses = 0;
    for (size_t i = 0; i < n && m->nclasses < CHURN_MODEL_MAX_CLASSES; i++) {
        if (!sizes[i] || spans[i] < sizes[i])
            continue; /* a span holds at least one object of its class */
        size_t at = m->nclasses++;
        while (at && m->class_size[at - 1] > sizes[i]) {
            m->class_size[at] = m->class_size[at - 1];
            m->class_span[at] = m->class_span[at - 1];
            at--;
        }
        m->class_size[at] = sizes[i];
        m->class_span[at] = spans[i];
    }
}

const char *churn_model_name(const churn_model *m)
{
    static const char *const names[] = {"none", "page", "glibc", "gperftools", "tcmalloc",
                                        "jemalloc"};
    return names[m->kind];
}

static void unit(churn_placement *out, uint64_t key, uint64_t span, uint64_t weight)
{
    out->key[out->n] = key;
    out->span_bytes[out->n] = span;
    out->weight[out->n] = weight;
    out->n++;
}

/* The pages of [lo, hi): the first and last are shared with whatever else lives there, the
   ones between belong to the object alone. */
static void page_range(churn_placement *out, uint64_t lo, uint64_t hi, uint64_t page)
{
    if (hi <= lo)
        hi = lo + 1; /* a zero-byte object still sits somewhere */
    uint64_t p0 = lo & ~(page - 1), p1 = (hi - 1) & ~(page - 1);
    if (p0 == p1) {
        unit(out, p0, page, hi - lo);
        return;
    }
    unit(out, p0, page, p0 + page - lo);
    unit(out, p1, page, hi - p1);
    out->owned = p1 - p0 - page;
}

/* The inverse of an odd number modulo 2^64 (Newton's iteration doubles the good bits). */
static uint64_t inverse_odd(uint64_t a)
{
    uint64_t x = a; /* right to 3 bits */
    for (int i = 0; i < 5; i++)
        x *= 2 - a * x;
    return x;
}

/* A jemalloc slab of class s spans lcm(s, page) bytes from a page boundary, so the object's
   index i in it satisfies i * s == addr (mod page); with g = gcd(s, page) that is
   i * (s/g) == (addr % page) / g (mod page/g), and s/g is odd. */
static void jemalloc_slab(churn_placement *out, uint64_t addr, uint64_t s, uint64_t page)
{
    uint64_t g = s & -s;
    if (g > page)
        g = page;
    uint64_t m = page / g, odd = s / g;
    uint64_t i = ((addr % page) / g) * inverse_odd(odd) & (m - 1);
    unit(out, addr - i * s, odd * page, s);
}

void churn_model_place(const churn_model *m, uint64_t addr, uint64_t usable,
                       churn_placement *out)
{
    out->n = 0;
    out->owned = 0;
    switch (m->kind) {
    case CHURN_MODEL_NONE:
        return;
    case CHURN_MODEL_GLIBC:
        /* the chunk's size field is the 8 bytes in front; the last 8 usable bytes are the
           next chunk's prev_size field, which an in-use chunk lends to its neighbour */
        page_range(out, addr - 8, addr + usable, m->page);
        return;
    case CHURN_MODEL_JEMALLOC:
        if (usable && usable <= jemalloc_small_max(m->page)) {
            jemalloc_slab(out, addr, usable, m->page);
        } else {
            /* a large extent: whole pages, one more for cache-oblivious placement, which
               puts the object at a random cache line of its first page */
            uint64_t start = addr & ~(m->page - 1);
            page_range(out, start, start + ((usable + m->page - 1) & ~(m->page - 1)) + m->page,
                       m->page);
        }
        return;
    case CHURN_MODEL_PAGE:
    case CHURN_MODEL_GPERFTOOLS:
    case CHURN_MODEL_TCMALLOC:
        /* Spans of one page hold whole objects, so the object's page is its span; spans of
           several pages (classes above 1 KiB) cannot be found from an address, and their
           pages with a live object are a lower bound (docs/fragmentation.md). */
        page_range(out, addr, addr + usable, m->page);
        return;
    }
}
