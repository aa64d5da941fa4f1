#!/bin/sh
# The trace's disk fills up, or CHURN_OUT cannot be written at all.  On a 2 MiB tmpfs (a real
# ENOSPC) the demo workload writes a 2.7 MiB trace: the program (which checks its own data and
# exits non-zero when it was corrupted) must run to its end, libchurn must say so in exactly one stderr line, and the trace must stay
# readable and say that events were dropped (a CHURN_REC_DROPPED record with reason
# CHURN_DROP_WRITE_ERROR, decoded here from the file itself, and the analyzer's dropped count
# and warning), ending with the program's normal exit.  On a read-only file system the trace
# cannot be created: one line, and the program runs untraced and unchanged.
# A disk (2.5 MiB) smaller than the first segment (4 MiB raw of a workload that compresses
# badly, test/programs/stderr_swap.c): the ring is cut to what the disk holds, said in one
# line with that size, the rest of the run is in the trace, and the dropped events are counted
# exactly: the trace's events and its dropped ones add up to those of the same run on a disk
# with room.  The same under a file size limit (RLIMIT_FSIZE) instead of a small disk, where the
# write past the limit must not kill the program with SIGXFSZ.
. test/lib.sh

[ "$(id -u)" = 0 ] || fail "needs root to mount a size-limited tmpfs"
make -s build/demo-workload >/dev/null || fail "cannot build build/demo-workload"
mkdir -p "$WORK/full" "$WORK/ro" "$WORK/small"
cleanup() {
    umount "$WORK/full" 2>/dev/null || true
    umount "$WORK/ro" 2>/dev/null || true
    umount "$WORK/small" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
mount -t tmpfs -o size=2m tmpfs "$WORK/full" || fail "cannot mount a 2 MiB tmpfs"
mount -t tmpfs -o ro,size=1m tmpfs "$WORK/ro" || fail "cannot mount a read-only tmpfs"
mount -t tmpfs -o size=2560k tmpfs "$WORK/small" || fail "cannot mount a 2.5 MiB tmpfs"

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
# The text report says so in its header, before any figure, not only among the warnings.
"$ANALYZE" "$WORK/trace.zst" 2>/dev/null | head -n 4 >"$WORK/report.head"
grep -q "WARNING: [0-9]* event(s) dropped by the shim: figures are incomplete" "$WORK/report.head" ||
    fail "the text report's header does not say events were dropped: $(cat "$WORK/report.head")"
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

# Segments close only by size here (CHURN_FLUSH_MS), so the first one is 4 MiB raw.
build_c stderr_swap test/programs/stderr_swap.c
swap() { # TRACE LABEL [COMMAND...]: COMMAND (prlimit) runs the untraced env that traces
    trace=$1
    label=$2
    shift 2
    status=0
    "$@" env CHURN_FLUSH_MS=3600000 CHURN_OUT="$trace" LD_PRELOAD="$SHIM" \
        "$WORK/stderr_swap" - 800000 >"$WORK/$label.out" 2>"$WORK/$label.err" || status=$?
    [ "$status" -eq 0 ] || fail "stderr_swap exited with status $status writing $trace ($label)"
}
swap "$WORK/ref.zst" ref
analyze "$WORK/ref.zst" "$WORK/ref.json"
swap "$WORK/small/trace.zst" small
cp "$WORK/small/trace.zst" "$WORK/small.zst"
swap "$WORK/fsize.zst" fsize prlimit --fsize=2621440
for case in small:"No space left on device" fsize:"File too large"; do
    label=${case%%:*}
    lines=$(grep -c '^libchurn:' "$WORK/$label.err" || true)
    [ "$lines" = 1 ] && grep -q "${case#*:}.*cut from 262144 KiB to the [0-9]* KiB the disk" "$WORK/$label.err" ||
        fail "$label: expected one line saying the ring is cut, got: $(cat "$WORK/$label.err")"
    analyze "$WORK/$label.zst" "$WORK/$label.json"
    check "$WORK/ref.json" "$WORK/$label.json" "$WORK/$label.err" "$label" <<'PY'
import re, sys
from churncheck import *
ref, small, label = load(sys.argv[1]), load(sys.argv[2]), sys.argv[4]
cut = int(re.search(r"to the (\d+) KiB", open(sys.argv[3]).read()).group(1))
if not 0 < cut <= 2560:
    fail("%s: the ring was cut to %d KiB where 2560 KiB fit" % (label, cut))
def events(r):
    t = field(r, "totals")
    return t["allocs"] + t["frees"] + t["unknown_frees"] + t["map_calls"]
expect("dropped events on a disk with room", field(ref, "totals", "dropped_events"), 0)
got, dropped = events(small), field(small, "totals", "dropped_events")
if not got:
    fail("no event in the trace after the ring was cut")
expect("events in the trace + dropped, against the same run on a disk with room",
       got + dropped, events(ref))
expect("dropped as write errors", field(small, "totals", "dropped_by_reason", "write_error"), dropped)
expect("metadata.exit.how", field(small, "metadata", "exit", "how"), "normal")
print("%s smaller than the first segment: ring cut to %d KiB, %d events kept + %d dropped = %d as on a disk with room"
      % ("disk" if label == "small" else "file size limit", cut, got, dropped, events(ref)))
PY
done
