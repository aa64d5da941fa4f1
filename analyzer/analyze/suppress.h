/*
 * Known allocations that are not leaks, kept out of the reports' callsite ranking (in the
 * spirit of LeakSanitizer's suppressions).  A rule is one line:
 *
 *   leak:GLOB   a callsite any of whose frames has a function (demangled, with or without
 *               its parameter list), source file or module matching GLOB (fnmatch)
 *   init:GLOB   a callsite allocating in a module matching GLOB, called from the dynamic
 *               loader (its innermost frames in that module, the next one in ld.so): what the
 *               module's initializers allocate when it is loaded
 *
 * The built-in list (docs/analyzer.md) holds libstdc++'s start-up allocations; files given
 * with --suppressions add rules.  Only callsites with objects live at the end are matched.
 */
#ifndef CHURN_SUPPRESS_H
#define CHURN_SUPPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "symbols/frames.h"
#include "analyze/growth.h"

enum churn_suppress_kind { CHURN_SUPPRESS_LEAK, CHURN_SUPPRESS_INIT };

typedef struct churn_suppression {
    enum churn_suppress_kind kind;
    char *rule;     /* as written, "init:libstdc++.so*" */
    const char *pattern; /* inside rule, after the colon */
    char *what;     /* what it is: the built-in's description, or "FILE:LINE" */
    /* tallies of churn_suppressions_apply */
    uint64_t callsites;
    int64_t live_count, live_bytes;
} churn_suppression;

typedef struct churn_suppressions {
    churn_suppression *rules;
    size_t count, cap;
    /* (stack id, rule index) of the matched callsites, sorted by stack id */
    uint64_t (*matched)[2];
    size_t nmatched;
    /* the same for the rows of the function table (functions.h) whose live objects all
       come from matched callsites: (function id, rule index of its first matched callsite) */
    uint64_t (*functions)[2];
    size_t nfunctions;
} churn_suppressions;

/* Adds the built-in rules. */
void churn_suppressions_defaults(churn_suppressions *s);

/* Adds the rules of a file; returns 0 with a one-line reason on a bad file or rule. */
int churn_suppressions_load(churn_suppressions *s, const char *path, char *err, size_t errlen);

/* Matches every callsite with live objects against the rules (the first that matches wins)
   and tallies each rule's matches; then marks the rows of functions (g's parents table, when
   it has one) that hold only matched callsites' live objects. */
void churn_suppressions_apply(churn_suppressions *s, const churn_growth *g,
                              const churn_frames_source *src);

/* The rule that suppresses this callsite, or NULL (s may be NULL: none). */
const churn_suppression *churn_suppressions_of(const churn_suppressions *s, uint64_t stack);

/* The same for a row of the function table, by its "stack" (the function id). */
const churn_suppression *churn_suppressions_of_function(const churn_suppressions *s,
                                                        uint64_t function);

void churn_suppressions_free(churn_suppressions *s);

#endif
