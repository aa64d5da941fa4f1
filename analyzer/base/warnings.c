#include "base/warnings.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/util.h"

void churn_warn(churn_warnings *w, const char *fmt, ...)
{
    if (w->count >= CHURN_WARNINGS_MAX) {
        w->suppressed++;
        return;
    }
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    churn_reserve(&w->lines, &w->cap, w->count + 1, sizeof *w->lines);
    w->lines[w->count++] = churn_xstrdup(buf);
}

void churn_warnings_free(churn_warnings *w)
{
    for (size_t i = 0; i < w->count; i++)
        free(w->lines[i]);
    free(w->lines);
    *w = (churn_warnings){0};
}

void churn_warnings_truncate(churn_warnings *w, size_t count, size_t suppressed)
{
    while (w->count > count)
        free(w->lines[--w->count]);
    w->suppressed = suppressed;
}
