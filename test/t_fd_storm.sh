#!/bin/sh
# Four threads that take libchurn's descriptor numbers over (test/programs/fd_storm.c: dup2,
# write, close, and the same past libc), with an epoch every millisecond and the trace written
# and opened again all along: the program runs as natively (no call of its own fails), and
# every one of its mallocs is in the trace, or the trace counts events as dropped and says so;
# and the epoch summaries agree with the events.
# The takeovers race libchurn's own moves of its descriptors, so the storm runs RUNS times:
# the races that lost a segment of the trace without a word, or closed the program's file
# under it, came up in about one run in fifteen.
. test/lib.sh

RUNS=40
build_c fd_storm test/programs/fd_storm.c -pthread
"$WORK/fd_storm" "$WORK/native.data" >"$WORK/native.out" 2>&1 ||
    fail "natively: $(tail -n 1 "$WORK/native.out")"
i=0
while [ "$i" -lt "$RUNS" ]; do
    i=$((i + 1))
    CHURN_EPOCH_MS=1 CHURN_FLUSH_MS=10 \
        traced "$WORK/r$i.zst" "$WORK/r$i.out" "$WORK/fd_storm" "$WORK/r$i.data"
    cmp -s "$WORK/native.out" "$WORK/r$i.out" ||
        fail "run $i: under the shim it printed '$(cat "$WORK/r$i.out")', natively '$(cat "$WORK/native.out")'"
    analyze "$WORK/r$i.zst" "$WORK/r$i.json"
done

check "$WORK" "$RUNS" <<'PY'
import os, sys
from churncheck import *
work, runs = sys.argv[1], int(sys.argv[2])
n = int(open(os.path.join(work, "native.out")).read().split()[1])
counted = 0
for i in range(1, runs + 1):
    report = load(os.path.join(work, "r%d.json" % i))
    what = "run %d" % i
    expect(what + ": metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
    allocs = sum(g["allocs"] for g in field(report, "growth")
                 if g["stack"] and g["stack"][0].startswith("storm "))
    dropped = field(report, "totals", "dropped_events")
    warned = any("dropped" in w for w in field(report, "warnings"))
    if dropped == 0 and allocs != n:
        fail("%s: %d of the program's %d allocations in the trace, none counted as dropped "
             "(warnings: %s)" % (what, allocs, n, "; ".join(field(report, "warnings"))[:400]))
    if dropped and (allocs + dropped < n or allocs > n or not warned):
        fail("%s: %d allocations traced and %d events dropped of %d, warned: %s"
             % (what, allocs, dropped, n, warned))
    # each summary's live figures are what the events before it leave live (t_summary_late.sh)
    live = [w for w in field(report, "warnings") if "whose live objects differ" in w]
    if dropped == 0 and live:
        fail("%s: %s" % (what, live[0]))
    counted += dropped > 0
print("%d storms of %d allocations each: the program as natively, every allocation traced "
      "(%d runs counted a loss, with a warning)" % (runs, n, counted))
PY
