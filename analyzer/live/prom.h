/*
 * The Prometheus text exposition (format 0.0.4) of the processes `churn serve` follows: one
 * family per figure, each sample labelled with the process (pid, executable, trace), names
 * and units by Prometheus's conventions (base units in the name, counters ending in _total),
 * and a fixed number of function series per process, so that label cardinality stays
 * bounded (docs/fleet.md lists every family).
 */
#ifndef CHURN_LIVE_PROM_H
#define CHURN_LIVE_PROM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "live/view.h"

/* One process as /metrics shows it. */
typedef struct churn_prom_proc {
    const char *trace, *exe;
    uint64_t pid;
    int readable; /* a segment was read; else only churn_trace_readable is written */
    int running;
    uint64_t restarts, lost_segments;
    const churn_view *view; /* NULL: not computed yet */
} churn_prom_proc;

void churn_prom_write(FILE *out, const churn_prom_proc *procs, size_t n);

#endif
