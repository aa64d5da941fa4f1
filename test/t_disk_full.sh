#!/bin/sh
# The trace's disk fills up, or CHURN_OUT cannot be written at all.  On a 2 MiB tmpfs (a real
# ENOSPC) the demo workload writes a 2.7 MiB trace: the program (which checks its own data and
# exits non-zero when it was corrupted) must run to its end, libchurn must say so in exactly one stderr line, and the trace must stay
# readable and say that events were dropped (a CHURN_REC_DROPPED record with reason
# CHURN_DROP_WRITE_ERROR, decoded here from the file itself, and the analyzer's dropped count
# and warning), ending with the program's normal exit.  On a read-only file system the trace
# cannot be created: one line, and the program runs untraced and unchanged.
. test/lib.sh

[ "$(id -u)" = 0 ] || fail "needs root to mount a size-limited tmpfs"
make -s build/demo-workload >/dev/null || fail "cannot build build/demo-workload"
mkdir -p "$WORK/full" "$WORK/ro"
cleanup() {
    umount "$WORK/full" 2>/dev/null || true
    umount "$WORK/ro" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
mount -t tmpfs -o size=2m tmpfs "$WORK/full" || fail "cannot mount a 2 MiB tmpfs"
mount -t tmpfs -o ro,size=1m tmpfs "$WORK/ro" || fail "cannot mount a read-only tmpfs"

# 60,000 requests in 64 KiB segments: about 2.7 MiB of trace (measured 4.5 MiB for 100,000),
# more than the disk holds, yet little enough that the wrapped part does not overwrite the
# first segment written after the failure, the one that records the drop.
status=0
CHURN_OUT="$WORK/full/trace.zst" CHURN_SEGMENT_KB=64 CHURN_RING_MB=64 LD_PRELOAD="$SHIM" \
    build/demo-workload 60000 >"$WORK/full.out" 2>"$WORK/full.err" || status=$?
[ "$status" -eq 0 ] || fail "the workload exited with status $status on a full disk: $(tail -n 1 "$WORK/full.err")"
lines=$(grep -c libchurn "$WORK/full.err" || true)
[ "$lines" = 1 ] || fail "expected one libchurn line on a full disk, got $lines: $(cat "$WORK/full.err")"
grep -q "No space left on device" "$WORK/full.err" ||
    fail "the libchurn line does not name the error: $(cat "$WORK/full.err")"
df_used=$(df -k --output=avail "$WORK/full" | tail -n 1)
[ "$df_used" -lt 64 ] || fail "the tmpfs never filled up ($df_used KiB free): the test did not test ENOSPC"

cp "$WORK/full/trace.zst" "$WORK/trace.zst"
analyze "$WORK/trace.zst" "$WORK/report.json"
check "$WORK/report.json" "$WORK/trace.zst" <<'PY'
import sys
from churncheck import *
report, trace = load(sys.argv[1]), sys.argv[2]
drops = [r for r in records(trace) if r["tag"] == 0x08]
write_errors = sum(r["a"] for r in drops if r["b"] == 2)
if not write_errors:
    fail("no CHURN_REC_DROPPED record with reason CHURN_DROP_WRITE_ERROR in the trace: %s" % drops)
dropped = field(report, "totals", "dropped_events")
if dropped < write_errors:
    fail("the analyzer reports %d dropped events, the trace's records say %d" % (dropped, write_errors))
expect("dropped as write errors, by the analyzer", field(report, "totals", "dropped_by_reason", "write_error"),
       write_errors)
if not any("unwritten: disk full" in w for w in field(report, "warnings")):
    fail("no analyzer warning naming the full disk: %s" % report["warnings"])
expect("metadata.exit.how on a full disk", field(report, "metadata", "exit", "how"), "normal")
print("full disk: %d events dropped and recorded as write errors, trace ends with the exit" % write_errors)
PY

status=0
CHURN_OUT="$WORK/ro/trace.zst" LD_PRELOAD="$SHIM" build/demo-workload 1000 \
    >"$WORK/ro.out" 2>"$WORK/ro.err" || status=$?
[ "$status" -eq 0 ] || fail "the workload exited with status $status when CHURN_OUT is read-only"
lines=$(grep -c libchurn "$WORK/ro.err" || true)
[ "$lines" = 1 ] && grep -q "Read-only file system" "$WORK/ro.err" ||
    fail "expected one libchurn line naming the read-only file system, got: $(cat "$WORK/ro.err")"
[ ! -e "$WORK/ro/trace.zst" ] || fail "a trace appeared on a read-only file system"
echo "read-only output: one line, the program ran untraced"
