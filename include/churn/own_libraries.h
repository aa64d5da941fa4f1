/*
 * The libraries libchurn.so loads into a traced process for itself (its link line in the
 * Makefile, SHIM_LIBS, and what those load): memory they map is libchurn's, never the
 * program's, so neither the shim's blind-spot detector (shim/record/blind.c) nor the analyzer names
 * one of them as the culprit of growth nothing traced explains.  Matched against a module's
 * file name (its basename's start).
 */
#ifndef CHURN_OWN_LIBRARIES_H
#define CHURN_OWN_LIBRARIES_H

#include <string.h>

static const char *const churn_own_libraries[] = {
    "libchurn.so", "libunwind.so", "libunwind-", "libzstd.so", "liblzma.so",
};
#define CHURN_N_OWN_LIBRARIES (sizeof churn_own_libraries / sizeof *churn_own_libraries)

/* Whether path (a file name or a path) names one of them. */
static inline int churn_own_library(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < CHURN_N_OWN_LIBRARIES; i++)
        if (!strncmp(base, churn_own_libraries[i], strlen(churn_own_libraries[i])))
            return 1;
    return 0;
}

#endif
