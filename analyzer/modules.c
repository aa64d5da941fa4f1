#include "modules.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int churn_modules_add(churn_modules *m, uint64_t id, uint64_t bias, uint64_t start,
                      uint64_t end, const char *path)
{
    const char *name = base_name(path);
    for (size_t i = 0; i < m->count; i++) {
        churn_module *e = &m->items[i];
        if (e->id == id && e->bias == bias && e->start == start && e->end == end &&
            strcmp(e->name, name) == 0)
            return 0;
    }
    churn_reserve(&m->items, &m->cap, m->count + 1, sizeof *m->items);
    m->items[m->count++] = (churn_module){id, bias, start, end, churn_xstrdup(name)};
    return 1;
}

const churn_module *churn_modules_find(const churn_modules *m, uint64_t ip)
{
    for (size_t i = m->count; i-- > 0;)
        if (ip >= m->items[i].start && ip < m->items[i].end)
            return &m->items[i];
    return NULL;
}

void churn_modules_free(churn_modules *m)
{
    for (size_t i = 0; i < m->count; i++)
        free(m->items[i].name);
    free(m->items);
    *m = (churn_modules){0};
}
