#!/bin/sh
# A traced process that dies (test/programs/crash.c): after abort() or a SIGTERM it has no
# handler for, the trace ends with the signal and holds the work epoch exactly; after SIGKILL, which the shim cannot see,
# what it had flushed (CHURN_FLUSH_MS) is readable and the report says the trace was cut short.
. test/lib.sh

build_c crash test/programs/crash.c

rm -f "$WORK/abort.zst"
status=0
CHURN_OUT="$WORK/abort.zst" LD_PRELOAD="$SHIM" "$WORK/crash" abort >"$WORK/abort.out" \
    2>"$WORK/abort.err" || status=$?
[ "$status" -eq 134 ] || fail "crash abort exited with status $status under the shim, not 134 (SIGABRT)"
[ -s "$WORK/abort.zst" ] || fail "the aborted process left no trace"
analyze "$WORK/abort.zst" "$WORK/abort.json"
check "$WORK/abort.json" "$WORK/abort.out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
expect_epoch(report, ph["work"], "work before abort()", allocs=13, frees=0,
             alloc_bytes=13 * 500)
expect("metadata.exit.how after abort()", field(report, "metadata", "exit", "how"), "signal")
expect("metadata.exit.detail after abort()", field(report, "metadata", "exit", "detail"), 6)
print("abort(): work epoch exact, exit by signal 6 recorded")
PY

# kill (SIGTERM) of a process with no handler of its own, long before its first flush
# (CHURN_FLUSH_MS 1000 by default): the trace still ends with the signal and holds the work.
rm -f "$WORK/term.zst"
CHURN_OUT="$WORK/term.zst" LD_PRELOAD="$SHIM" "$WORK/crash" hang >"$WORK/term.out" \
    2>"$WORK/term.err" &
pid=$!
tries=0
until grep -q "^phase idle" "$WORK/term.out" 2>/dev/null; do
    tries=$((tries + 1))
    [ "$tries" -lt 300 ] || { kill -9 "$pid"; fail "crash hang never printed its phases"; }
    sleep 0.05
done
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[ "$status" -eq 143 ] || fail "crash hang exited with status $status after SIGTERM, not 143"
analyze "$WORK/term.zst" "$WORK/term.json"
check "$WORK/term.json" "$WORK/term.out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
expect_epoch(report, ph["work"], "work before SIGTERM", allocs=13, frees=0, alloc_bytes=13 * 500)
expect("metadata.exit after SIGTERM", field(report, "metadata", "exit"),
       {"how": "signal", "detail": 15})
print("SIGTERM: work epoch exact, exit by signal 15 recorded")
PY

rm -f "$WORK/kill.zst"
CHURN_FLUSH_MS=50 CHURN_OUT="$WORK/kill.zst" LD_PRELOAD="$SHIM" "$WORK/crash" hang \
    >"$WORK/kill.out" 2>"$WORK/kill.err" &
pid=$!
# Wait (bounded) until the work epoch is readable from the live file, then kill -9.
tries=0
until [ -s "$WORK/kill.out" ] && "$ANALYZE" --json "$WORK/kill.zst" >"$WORK/live.json" 2>/dev/null &&
    check "$WORK/live.json" "$WORK/kill.out" >/dev/null 2>&1 <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
sys.exit(0 if ph["work"] in epochs(report) and epochs(report)[ph["work"]]["allocs"] == 13 else 1)
PY
do
    tries=$((tries + 1))
    if [ "$tries" -ge 300 ] || ! kill -0 "$pid" 2>/dev/null; then
        kill -9 "$pid" 2>/dev/null || true
        cat "$WORK/kill.err"
        fail "the work epoch of the running process never became readable in $WORK/kill.zst"
    fi
    sleep 0.1
done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
analyze "$WORK/kill.zst" "$WORK/kill.json"
check "$WORK/kill.json" "$WORK/kill.out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
expect_epoch(report, ph["work"], "work before SIGKILL", allocs=13, frees=0,
             alloc_bytes=13 * 500)
expect("metadata.exit.how after SIGKILL", field(report, "metadata", "exit", "how"), "none")
if not any("exit" in w or "cut" in w for w in field(report, "warnings")):
    fail("no warning that the killed process's trace was cut short: %s" % report["warnings"])
print("SIGKILL: flushed work readable, trace reported as cut short")
PY
