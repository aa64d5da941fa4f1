#!/bin/sh
# Signals and longjmp under the shim (test/programs/signals.c): 5,000 epoch signals fired at
# the allocating thread (ticks inside the shim and during flushes), a 1 kHz SIGALRM, and a
# longjmp out of frames that allocated.  The program must finish with its own checks passing,
# every one of its 200,000 + 8 allocations and frees must be in the trace, and the signals
# must have begun epochs.
. test/lib.sh

build_c signals test/programs/signals.c -pthread
CHURN_EPOCH_SIGNAL=USR2 traced "$WORK/trace.zst" "$WORK/out" "$WORK/signals"
analyze "$WORK/trace.zst" "$WORK/report.json"
check "$WORK/report.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
growth = field(report, "growth")
main_allocs = sum(g["allocs"] for g in growth if any(f.startswith("main ") for f in g["stack"][:1]))
main_frees = sum(g["frees"] for g in growth if any(f.startswith("main ") for f in g["stack"][:1]))
deep_allocs = sum(g["allocs"] for g in growth if any(f.startswith("deep ") for f in g["stack"][:1]))
expect("allocations made in main", main_allocs, 200000)
expect("frees of main's blocks", main_frees, 200000)
expect("allocations made in deep() before the longjmp", deep_allocs, 8)
epochs = field(report, "metadata", "last_epoch")
if epochs < 4000:
    fail("only %d epochs begun by 5,000 USR2 signals, each sent once the previous one began its epoch" % epochs)
expect("dropped events", field(report, "totals", "dropped_events"), 0)
print("signals: 200,008 allocations exact, %d epochs from USR2" % epochs)
PY
