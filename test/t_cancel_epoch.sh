#!/bin/sh
# pthread_cancel of a thread that begins epochs (test/programs/cancel_epoch.c): the cancel is
# pending when the thread calls churn_epoch() at a moment the epoch reads the process's RSS
# afresh.  churn_epoch() holds no cancellation point, so the thread is cancelled at its own
# pthread_testcancel, after its 1,000 epochs; its thread-specific block is freed by the key's
# destructor, traced.  Then the main thread begins 50 epochs, each with one kept block: the
# trace holds all 1,050 epochs, the 50 blocks, the free of the thread's block, nothing dropped,
# and the normal exit.
. test/lib.sh

build_c cancel_epoch test/programs/cancel_epoch.c -pthread
traced "$WORK/trace.zst" "$WORK/out" "$WORK/cancel_epoch"
analyze "$WORK/trace.zst" "$WORK/report.json"
check "$WORK/report.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
expect("epochs begun (1,000 by the cancelled thread, 50 after)",
       field(report, "metadata", "last_epoch"), 1050)
after = growth_with(report, "after_cancel")
expect("after_cancel's blocks (allocs, live)", (sum(g["allocs"] for g in after),
       sum(g["live_count"] for g in after)), (50, 50))
# each of the main thread's epochs holds its block; the last one the exit's printing too
ones = [e for e in field(report, "epochs") if 1000 < e["epoch"] < 1050 and e["allocs"] == 1]
expect("epochs 1001 to 1049 with their one allocation", len(ones), 49)
live = [g for g in growth_with(report, "thread_block") if g["live_count"]]
if live:
    fail("the cancelled thread's block is live at exit: its destructor's free was not traced")
expect("dropped events", field(report, "totals", "dropped_events"), 0)
expect("metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
print("a thread cancelled among its epochs: 1,050 epochs, its block freed, 50 blocks after")
PY
