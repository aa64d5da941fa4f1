/*
 * The two report forms (text for people, JSON for tools) and what they share: which
 * callsites are shown, how the process ended, and the final list of warnings.
 */
#ifndef CHURN_REPORT_H
#define CHURN_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "analyze/analysis.h"
#include "analyze/suppress.h"

typedef struct churn_report_options {
    const char *trace_path;
    size_t top; /* callsites shown; 0 = all (JSON) */
    const churn_suppressions *suppress; /* applied; NULL: none */
} churn_report_options;

void churn_report_text(FILE *out, churn_analysis *a, const churn_report_options *o);
void churn_report_json(FILE *out, churn_analysis *a, const churn_report_options *o);
/* A JSON string of s, quoted and escaped as the JSON report writes its strings. */
void churn_report_json_string(FILE *out, const char *s);

/* Callsites worth showing (activity in the window or live objects), by growth; at most top
   (0 = all).  The caller frees the array. */
churn_callsite **churn_report_callsites(churn_analysis *a, size_t top, size_t *n);

/* Rows the rankings of the text report and the page show: they grow (CHURN_REPORT_GROWS bytes
   per epoch or more, what prints as 1 B), hold something live at the end, or retained
   something (a class other than steady: kept until the exit, reclaimed in bulk), or, in a
   sampled trace, have samples (their growth is an estimate, 0 within its error).  The others
   only churned (the JSON lists them).  s is a row of g (a->growth or a->functions.growth). */
#define CHURN_REPORT_GROWS 0.5
int churn_report_ranked(const churn_analysis *a, const churn_growth *g,
                        const churn_callsite *s);

/* Function rows worth showing, by growth, without those the suppression rules keep out; at
   most o->top (0 = all).  The caller frees the array. */
churn_callsite **churn_report_functions(churn_analysis *a, const churn_report_options *o,
                                        size_t *n);
/* The same, only the rows ranked (churn_report_ranked); *unranked: how many were left out for
   neither growing nor holding nor retaining anything. */
churn_callsite **churn_report_ranked_functions(churn_analysis *a, const churn_report_options *o,
                                               size_t *n, size_t *unranked);
/* A module whose ips the report resolved, where its names came from, and, when it has no
   debug info, the Debian package that installed it (dbgsym.h), whose PACKAGE-dbgsym carries
   its debug file; package NULL otherwise. */
typedef struct churn_report_debug {
    churn_module_debug m;
    const char *package;
} churn_report_debug;
/* The caller frees the array. */
churn_report_debug *churn_report_debug_info(churn_analysis *a, size_t *n);

/* "normal", "_exit", "quick_exit", "signal", "exec", "threads", "unknown", or "none" when the
   trace has no exit record. */
const char *churn_report_exit_how(const churn_analysis *a);

/* The name the traced program was run as, when the index beside the trace (proctree.h) has
   it and it differs from its executable's file name (redis-server, a symlink to
   redis-check-rdb): 1 with both basenames written (len bytes each), else 0. */
int churn_report_run_as(const churn_report_options *o, char *file, char *name, size_t len);

/* How the process ended, for a header: "exit 3", "signal 6", "_exit 0", "exec", "no exit
   record"; written into buf when it has a number. */
const char *churn_report_exit_text(const churn_analysis *a, char *buf, size_t len);
/* v in binary units with `unit` after the prefix: "512B", "1.9MiB" for "B"; one decimal from
   1024 up, whole below it. */
const char *churn_report_binary(double v, const char *unit, char *buf, size_t len);

/* "Steady window: epochs A..B (...)": the epochs slopes and rankings are fitted over, what was
   left out, and the options that change it; one line, without its newline. */
void churn_report_steady_line(FILE *out, const churn_analysis *a);

/* Segments the trace once had that were not used (overwritten, or before a gap). */
unsigned long long churn_report_segments_dropped(const churn_analysis *a);

/* What happened to the objects of a row of g (a->growth; a->functions.growth: from its
   callsites' classes, churn_functions_retention). */
churn_retained churn_report_retention(const churn_analysis *a, const churn_growth *g,
                                      const churn_callsite *s);

/* A retention class as the text report and the page say it: the JSON's name, but "live at
   end" for objects live where the trace ended without the program ending them of its own
   accord (growth.h). */
const char *churn_report_retention_words(enum churn_retention kind);

/* The C++ type a callsite constructs, or NULL (cxxtype.h). */
const char *churn_report_type(churn_analysis *a, const churn_callsite *s);
/* Fills the functions' types and pinned bytes once; every report calls it before it prints
   them. */
void churn_report_types(churn_analysis *a);

/* The whole trace is one epoch: nothing marked units of work, so there is no growth per
   epoch to fit.  The reports say how to get epochs. */
int churn_report_single_epoch(const churn_analysis *a);
#define CHURN_REPORT_EPOCH_SOURCES                                                          \
    "CHURN_EPOCH_AT=<function> (a function called once per request), CHURN_EPOCH_MS=<ms> "  \
    "(a timer), CHURN_EPOCH_SIGNAL=USR2 (then kill -USR2 <pid>) or churn_epoch_begin() "     \
    "from include/churn.h"

/* A sampled trace's error bounds (CHURN_SAMPLE_BYTES; docs/analyzer.md, "Sampled traces"),
   as standard errors: of a row's estimated growth per epoch (alloc_bytes: the row's
   estimated bytes allocated in the window), and of a bytes figure that
   rests on k samples.  Both 0 when the trace is not sampled. */
double churn_report_growth_se(const churn_analysis *a, const churn_growth *g,
                              const churn_callsite *s, uint64_t alloc_bytes);
double churn_report_bytes_se(const churn_analysis *a, double bytes, int64_t k);

/* The warnings as the text report and the page print them: those alike but for their paths
   and numbers (a module without debug info each) folded into the first, which names the
   others' files.  The caller frees each line and the array. */
char **churn_report_folded_warnings(const churn_warnings *w, size_t *n);

/* Adds the symbolizer's warnings to the analysis's; call after all stacks were resolved. */
void churn_report_collect_warnings(churn_analysis *a);
/* What the shim's blind-spot detector said (its counters, shim/record/blind.c). */
typedef struct churn_untraced {
    uint64_t bytes;     /* its largest estimate of the growth nothing traced explains */
    const char *module; /* the likely culprit's module, or NULL (never libchurn's own) */
    int engine;         /* a collected runtime's own heap: churn_engines index + 1, or 0 */
    int allocator;      /* churn_hidden_allocators index + 1, or 0 */
    int runtime;        /* churn_runtime_heaps index + 1, or 0 */
    int file;           /* the growth is a written file mapping's copy-on-write pages */
} churn_untraced;
/* Fills u and returns 1 when the detector warned, else 0. */
int churn_report_untraced_of(const churn_analysis *a, churn_untraced *u);
/* When it warned: the warning's text, which says "not traced", in buf; returns 1. */
int churn_report_untraced(const churn_analysis *a, char *buf, size_t len);

#endif
