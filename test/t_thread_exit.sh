#!/bin/sh
# Threads that exit (one returns, one calls pthread_exit) while their events may still be
# buffered (test/programs/thread_exit.c): all of those events must reach the trace.
. test/lib.sh

build_c thread_exit test/programs/thread_exit.c -pthread
traced "$WORK/trace.zst" "$WORK/out" "$WORK/thread_exit"
analyze "$WORK/trace.zst" "$WORK/report.json"

check "$WORK/report.json" "$WORK/out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
allocs, frees, alloc_bytes, free_bytes = [
    int(w) for w in open(sys.argv[2]).read().split("expect ")[1].split()]
expect_epoch(report, ph["work"], "threads working before they exit", allocs=allocs,
             frees=frees, alloc_bytes=alloc_bytes, free_bytes=free_bytes)
expect("live (count, bytes) change in the work epoch", live_delta(report, ph["work"], "work"),
       (allocs - frees, alloc_bytes - free_bytes))
for function, made, kept in (("returning_alloc", 37, 7), ("exiting_alloc", 23, 3)):
    entries = growth_with(report, function)
    if not entries:
        fail("no growth entry for %s" % function)
    expect("%s (allocs, live_count)" % function,
           (sum(g["allocs"] for g in entries), sum(g["live_count"] for g in entries)),
           (made, kept))
print("events of both exiting threads present")
PY
