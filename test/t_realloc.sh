#!/bin/sh
# realloc edge cases (test/programs/realloc_edges.c): realloc(NULL, n) is an allocation,
# realloc(p, 0) a free, shrinking and growing a free plus an allocation, failed calls and
# free(NULL) nothing at all; reallocarray and calloc likewise.  Exact per epoch.
. test/lib.sh

build_c realloc_edges test/programs/realloc_edges.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/realloc_edges"
analyze "$WORK/trace.zst" "$WORK/report.json"

check "$WORK/report.json" "$WORK/out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
cases = [line.split()[1:] for line in open(sys.argv[2]) if line.startswith("expect ")]
if len(cases) != 11:
    fail("realloc_edges printed %d expectations, not 11" % len(cases))
for name, allocs, frees, alloc_bytes, free_bytes in cases:
    allocs, frees, alloc_bytes, free_bytes = map(int, (allocs, frees, alloc_bytes, free_bytes))
    expect_epoch(report, ph[name], name, allocs=allocs, frees=frees,
                 alloc_bytes=alloc_bytes, free_bytes=free_bytes)
    expect("%s live (count, bytes) change" % name, live_delta(report, ph[name], name),
           (allocs - frees, alloc_bytes - free_bytes))
print("%d realloc cases exact" % len(cases))
PY
