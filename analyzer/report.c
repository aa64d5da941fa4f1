#include "report.h"

#include <stdlib.h>

static int worth_showing(const churn_callsite *s)
{
    return s->allocs || s->frees || s->live_count || s->live_bytes;
}

churn_callsite **churn_report_callsites(churn_analysis *a, size_t top, size_t *n)
{
    size_t total, kept = 0;
    churn_callsite **v = churn_growth_sorted(&a->growth, &total);
    for (size_t i = 0; i < total && (!top || kept < top); i++)
        if (worth_showing(v[i]))
            v[kept++] = v[i];
    *n = kept;
    return v;
}

const char *churn_report_exit_how(const churn_analysis *a)
{
    if (!a->has_exit)
        return "none";
    switch (a->exit_how) {
    case CHURN_EXIT_NORMAL:
        return "normal";
    case CHURN_EXIT_UNDERSCORE:
        return "_exit";
    case CHURN_EXIT_SIGNAL:
        return "signal";
    case CHURN_EXIT_EXEC:
        return "exec";
    case CHURN_EXIT_QUICK:
        return "quick_exit";
    case CHURN_EXIT_THREADS:
        return "threads";
    default:
        return "unknown";
    }
}

unsigned long long churn_report_segments_dropped(const churn_analysis *a)
{
    return (unsigned long long)a->first_seq;
}

churn_retained churn_report_retention(const churn_analysis *a, const churn_growth *g,
                                      const churn_callsite *s)
{
    return churn_growth_retention(g, s, a->has_exit);
}

const char *churn_report_type(churn_analysis *a, const churn_callsite *s)
{
    return churn_cxx_type_of(a->types, s->stack);
}

void churn_report_types(churn_analysis *a)
{
    if (!a->types_done)
        churn_functions_types(&a->functions, &a->growth, a->types);
    a->types_done = 1;
}

int churn_report_single_epoch(const churn_analysis *a)
{
    return a->first_epoch == a->last_epoch && !a->window.has_first && !a->window.has_last;
}

void churn_report_collect_warnings(churn_analysis *a)
{
    const char *const *lines;
    size_t n = churn_symbolizer_warnings(a->sym, &lines);
    for (size_t i = 0; i < n; i++)
        churn_warn(a->warn, "%s", lines[i]);
}
