#!/bin/sh
# Signal handlers under the shim (test/programs/sigalloc.c): a 10 kHz SIGALRM handler that
# mallocs and frees while the main thread maps and unmaps pages (so some runs interrupt
# libchurn's own work on that thread: those allocations go to the real allocator untraced,
# docs/design.md), and process-wide epoch signals (CHURN_EPOCH_SIGNAL=USR2) that land on any
# program thread and keep coming during the final flush at exit.  The
# program must finish with its checks passing; every one of its 200,000 page calls must be in
# the trace; the handler's traced allocations must be matched by traced frees (an allocation
# made untraced under the guard is freed untraced too: no unknown frees), no more than the
# handler ran; and the trace must end with the normal exit.
. test/lib.sh

build_c sigalloc test/programs/sigalloc.c -pthread
CHURN_EPOCH_SIGNAL=USR2 traced "$WORK/trace.zst" "$WORK/out" "$WORK/sigalloc"
analyze "$WORK/trace.zst" "$WORK/report.json"
check "$WORK/report.json" "$WORK/out" "$WORK/trace.zst" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
words = open(sys.argv[2]).read().split()
runs, maps = int(words[1]), int(words[3])
calls = [r for r in records(sys.argv[3]) if r["tag"] & 0xF0 == 0x40 and not r["internal"]]
mmaps = sum(1 for r in calls if r["kind"] == 0 and r["length"] == 4096)
munmaps = sum(1 for r in calls if r["kind"] == 1 and r["length"] == 4096)
if mmaps < maps or munmaps < maps:
    fail("page calls in the trace: %d mmap, %d munmap of one page; the program made %d each"
         % (mmaps, munmaps, maps))
handler = [g for g in field(report, "growth") if g["stack"] and g["stack"][0].startswith("on_alarm ")]
allocs, frees = sum(g["allocs"] for g in handler), sum(g["frees"] for g in handler)
if not allocs or allocs > runs:
    fail("%d traced allocations of the handler, which ran %d times" % (allocs, runs))
expect("frees of the handler's traced blocks", frees, allocs)
expect("unknown frees", field(report, "totals", "unknown_frees"), 0)
expect("dropped events", field(report, "totals", "dropped_events"), 0)
expect("metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
if field(report, "metadata", "last_epoch") < 100:
    fail("only %d epochs from the USR2 storm" % report["metadata"]["last_epoch"])
print("signals: %d handler runs, %d traced (the rest under libchurn's guard), %d page calls, "
      "%d epochs" % (runs, allocs, mmaps + munmaps, report["metadata"]["last_epoch"]))
PY
