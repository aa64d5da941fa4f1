#!/bin/sh
# The ring bound: with CHURN_RING_MB=1 a long run wraps, the file never exceeds 1 MiB, and it
# still analyzes: the latest epochs are there, the earliest are gone, and the leak is still
# found with every leaked object accounted for (carried over from overwritten segments).
. test/lib.sh

requests=300000
build_c request_loop test/programs/request_loop.c
CHURN_RING_MB=1 CHURN_SEGMENT_KB=64 \
    traced "$WORK/trace.zst" "$WORK/out" "$WORK/request_loop" "$requests"
size=$(stat -c %s "$WORK/trace.zst")
[ "$size" -le 1048576 ] || fail "trace is $size bytes with CHURN_RING_MB=1"
analyze "$WORK/trace.zst" "$WORK/report.json"

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
