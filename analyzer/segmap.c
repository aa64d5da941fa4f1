#include "segmap.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "util.h"

static int used(const churn_segmap *m, size_t i)
{
    return m->slots[i].generation == m->generation;
}

static size_t probe(const churn_segmap *m, uint64_t addr)
{
    size_t i = churn_hash64(addr) & m->mask;
    while (used(m, i) && m->slots[i].addr != addr)
        i = (i + 1) & m->mask;
    return i;
}

void churn_segmap_clear(churn_segmap *m)
{
    m->count = 0;
    if (++m->generation == 0 && m->slots) {
        /* after 2^32 segments, stale generations could look current again */
        memset(m->slots, 0, (m->mask + 1) * sizeof *m->slots);
        m->generation = 1;
    }
}

static void grow(churn_segmap *m)
{
    churn_segmap_entry *old = m->slots;
    size_t old_n = old ? m->mask + 1 : 0;
    uint32_t gen = m->generation;
    size_t n = old_n ? old_n * 2 : 1024;
    m->slots = churn_xcalloc(n, sizeof *m->slots);
    m->mask = n - 1;
    m->generation = 1;
    for (size_t i = 0; i < old_n; i++)
        if (old[i].generation == gen) {
            churn_segmap_entry e = old[i];
            e.generation = 1;
            m->slots[probe(m, e.addr)] = e;
        }
    free(old);
}

void churn_segmap_put(churn_segmap *m, uint64_t addr, uint64_t number, uint64_t info,
                      uint64_t epoch)
{
    if (!m->slots || (m->count + 1) * 4 > (m->mask + 1) * 3)
        grow(m);
    size_t i = probe(m, addr);
    if (!used(m, i))
        m->count++;
    m->slots[i] = (churn_segmap_entry){addr, number, info, epoch, m->generation};
}

int churn_segmap_take(churn_segmap *m, uint64_t addr, churn_segmap_entry *out)
{
    if (!m->slots || !m->count)
        return 0;
    size_t i = probe(m, addr);
    if (!used(m, i))
        return 0;
    *out = m->slots[i];
    m->count--;
    /* backward-shift deletion, as in live.c */
    size_t j = i;
    for (;;) {
        j = (j + 1) & m->mask;
        if (!used(m, j))
            break;
        size_t home = churn_hash64(m->slots[j].addr) & m->mask;
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].generation = m->generation - 1;
    return 1;
}

void churn_segmap_free(churn_segmap *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}
