#include "read/modules.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int churn_module_map_add(churn_module_map *m, uint64_t id, uint64_t bias, uint64_t start,
                         uint64_t end, const char *path)
{
    if (id >= CHURN_MODULES_MAX)
        return -1;
    if (!m->by_id)
        m->by_id = churn_xcalloc(CHURN_MODULES_MAX, sizeof *m->by_id);
    const char *name = base_name(path);
    if (m->by_id[id]) {
        const churn_module_range *e = &m->items[m->by_id[id] - 1];
        return e->bias == bias && e->start == start && e->end == end &&
                       strcmp(e->name, name) == 0
                   ? 0
                   : -1;
    }
    churn_reserve(&m->items, &m->cap, m->count + 1, sizeof *m->items);
    m->items[m->count++] = (churn_module_range){id, bias, start, end, churn_xstrdup(name)};
    m->by_id[id] = m->count;
    return 1;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The piece whose start is the greatest bound not above addr, or nbounds when none is. */
static size_t piece_of(const churn_module_map *m, uint64_t addr)
{
    size_t lo = 0, hi = m->nbounds;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->bounds[mid] <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lo - 1 : m->nbounds;
}

static size_t next_free(size_t *next, size_t i)
{
    size_t root = i;
    while (next[root] != root)
        root = next[root];
    while (next[i] != root) {
        size_t up = next[i];
        next[i] = root;
        i = up;
    }
    return root;
}

/* Newest module first, each takes the pieces of its range that no newer one took (skipping
   taken pieces through next[], with path compression): O(n log n) for n modules. */
static void build_index(churn_module_map *m)
{
    free(m->bounds);
    free(m->owner);
    m->bounds = churn_xmalloc((2 * m->count + 1) * sizeof *m->bounds);
    size_t n = 0;
    for (size_t i = 0; i < m->count; i++)
        if (m->items[i].start < m->items[i].end) {
            m->bounds[n++] = m->items[i].start;
            m->bounds[n++] = m->items[i].end;
        }
    qsort(m->bounds, n, sizeof *m->bounds, by_value);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!k || m->bounds[k - 1] != m->bounds[i])
            m->bounds[k++] = m->bounds[i];
    m->nbounds = k;
    m->owner = churn_xcalloc(k + 1, sizeof *m->owner);
    size_t *next = churn_xmalloc((k + 1) * sizeof *next);
    for (size_t i = 0; i <= k; i++)
        next[i] = i;
    for (size_t i = m->count; i-- > 0;) {
        const churn_module_range *e = &m->items[i];
        if (e->start >= e->end)
            continue;
        size_t first = piece_of(m, e->start), last = piece_of(m, e->end); /* exclusive */
        for (size_t p = next_free(next, first); p < last; p = next_free(next, p)) {
            m->owner[p] = i + 1;
            next[p] = p + 1;
        }
    }
    free(next);
    m->indexed = m->count;
}

const churn_module_range *churn_module_map_find(const churn_module_map *m, uint64_t ip)
{
    if (m->indexed != m->count)
        build_index((churn_module_map *)m); /* a cache: the map itself is unchanged */
    size_t p = piece_of(m, ip);
    if (p >= m->nbounds || !m->owner[p])
        return NULL;
    return &m->items[m->owner[p] - 1];
}

void churn_module_map_free(churn_module_map *m)
{
    for (size_t i = 0; i < m->count; i++)
        free(m->items[i].name);
    free(m->items);
    free(m->by_id);
    free(m->bounds);
    free(m->owner);
    *m = (churn_module_map){0};
}
