#!/bin/sh
# The ring bound: with CHURN_RING_MB=1 a long run wraps, the file never exceeds 1 MiB, and it
# still analyzes: the latest epochs are there, the earliest are gone, and the leak is still
# found with every leaked object accounted for (carried over from overwritten segments).
# Then CHURN_RING_MB=1 with the default 4 MiB segments and a workload that compresses badly
# (test/programs/stderr_swap.c): the segments are cut to fit the ring, which libchurn says in
# one line at start-up, and the trace holds the last of the run, with no event dropped (a 4
# MiB segment of it does not fit in the ring: every one would be dropped, a trace of no
# events).  The reports are read with --all-epochs: the checks compare single epochs, which
# the default merges into buckets once there are more than 4,096.
. test/lib.sh

requests=300000
build_c request_loop test/programs/request_loop.c
CHURN_RING_MB=1 CHURN_SEGMENT_KB=64 \
    traced "$WORK/trace.zst" "$WORK/out" "$WORK/request_loop" "$requests"
size=$(stat -c %s "$WORK/trace.zst")
[ "$size" -le 1048576 ] || fail "trace is $size bytes with CHURN_RING_MB=1"
analyze "$WORK/trace.zst" "$WORK/report.json" --all-epochs

check "$WORK/report.json" "$WORK/trace.zst" "$requests" <<'PY'
import sys
from churncheck import *
report, requests = load(sys.argv[1]), int(sys.argv[3])
segments = segment_headers(sys.argv[2])
if not segments:
    fail("no valid segment in the ring")
if min(s["seq"] for s in segments) == 0:
    fail("segment 0 is still in the ring: %d requests did not wrap 1 MiB" % requests)
numbers = sorted(epochs(report))
if not numbers:
    fail("the wrapped trace analyzes to no epochs")
if numbers[0] <= 1:
    fail("epoch %d of the first requests survived the wrap" % numbers[0])
if numbers[-1] not in (requests - 1, requests):
    fail("last epoch %d is not the last request's (%d requests)" % (numbers[-1], requests))
by_number = epochs(report)
for n in numbers[1:-1]:
    if n - 1 in by_number:
        expect("live (count, bytes) change in epoch %d" % n, live_delta(report, n, "request"),
               (1, 48))
top = field(report, "growth")[0]
if not top["stack"][0].startswith("remember_session"):
    fail("top growth entry after the wrap is not remember_session: %s" % top["stack"][:2])
expect("leak bytes_per_epoch after the wrap", round(top["bytes_per_epoch"], 3), 48)
expect("leaked sessions live at exit after the wrap", top["live_count"], requests)
print("ring of %d segments (seq %d..%d) holds epochs %d..%d"
      % (len(segments), min(s["seq"] for s in segments), max(s["seq"] for s in segments),
         numbers[0], numbers[-1]))
PY

build_c stderr_swap test/programs/stderr_swap.c
rm -f "$WORK/cut.zst"
status=0
CHURN_RING_MB=1 CHURN_OUT="$WORK/cut.zst" LD_PRELOAD="$SHIM" "$WORK/stderr_swap" - 800000 \
    >"$WORK/cut.out" 2>"$WORK/cut.err" || status=$?
[ "$status" -eq 0 ] || fail "stderr_swap exited with status $status under CHURN_RING_MB=1"
lines=$(grep -c '^libchurn:' "$WORK/cut.err" || true)
[ "$lines" = 1 ] && grep -q 'CHURN_RING_MB=1 is too small for segments of CHURN_SEGMENT_KB=4096: segments are cut to [0-9]* KiB' "$WORK/cut.err" ||
    fail "CHURN_RING_MB=1 with 4 MiB segments: expected one line saying the segments are cut, got: $(cat "$WORK/cut.err")"
size=$(stat -c %s "$WORK/cut.zst")
[ "$size" -le 1048576 ] || fail "trace is $size bytes with CHURN_RING_MB=1 and cut segments"
analyze "$WORK/cut.zst" "$WORK/cut.json" --all-epochs
check "$WORK/cut.json" "$WORK/cut.zst" "$WORK/cut.err" <<'PY'
import re, sys
from churncheck import *
report = load(sys.argv[1])
segments = segment_headers(sys.argv[2])
cut_kib = int(re.search(r"cut to (\d+) KiB", open(sys.argv[3]).read()).group(1))
if max(s["raw_bytes"] for s in segments) > cut_kib * 1024 + 65536:
    fail("a segment of %d raw bytes, the line said %d KiB" % (max(s["raw_bytes"] for s in segments), cut_kib))
if len(segments) < 4:
    fail("the 1 MiB ring holds %d segments, the line said four at the least" % len(segments))
expect("dropped events with cut segments", field(report, "totals", "dropped_events"), 0)
allocs = field(report, "totals", "allocs")
if allocs < 50000:
    fail("only %d allocations in the 1 MiB ring of cut segments" % allocs)
expect("metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
print("CHURN_RING_MB=1, 4 MiB segments asked: cut to %d KiB, %d segments in the ring, %d allocations, none dropped"
      % (cut_kib, len(segments), allocs))
PY
