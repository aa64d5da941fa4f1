#!/bin/sh
# A trace cut in the middle of a segment (as after a crash or a full disk) still analyzes:
# the complete segments before the cut give the same epochs as the whole trace, nothing past
# the cut is invented, and the report warns that the trace was cut short.
# Both are read with --all-epochs: 20,000 epochs would otherwise be merged into buckets.
. test/lib.sh

requests=20000
build_c request_loop test/programs/request_loop.c
CHURN_SEGMENT_KB=64 traced "$WORK/full.zst" "$WORK/out" "$WORK/request_loop" "$requests"
analyze "$WORK/full.zst" "$WORK/full.json" --all-epochs

cut=$(check "$WORK/full.zst" <<'PY'
import sys
from churncheck import *
segments = sorted(segment_headers(sys.argv[1]), key=lambda s: s["offset"])
if len(segments) < 4:
    fail("only %d segments with CHURN_SEGMENT_KB=64: cannot cut one in the middle" % len(segments))
expect("segment sequence numbers in file order", [s["seq"] for s in segments],
       list(range(len(segments))))
middle = segments[len(segments) // 2]
print(middle["offset"] + 56 + middle["zstd_bytes"] // 2)
PY
) || { echo "$cut"; exit 1; }
head -c "$cut" "$WORK/full.zst" >"$WORK/cut.zst"
analyze "$WORK/cut.zst" "$WORK/cut.json" --all-epochs

check "$WORK/full.json" "$WORK/cut.json" "$WORK/full.zst" "$cut" <<'PY'
import sys
from churncheck import *
full, cut = load(sys.argv[1]), load(sys.argv[2])
limit = int(sys.argv[4])
complete = [s for s in segment_headers(sys.argv[3], limit) if s["complete"]]
last_complete = max(s["last_epoch"] for s in complete)
cut_by_number = epochs(cut)
cut_epochs = sorted(cut_by_number)
full_epochs = epochs(full)
if not cut_epochs:
    fail("the cut trace analyzes to no epochs at all")
if cut_epochs[-1] < last_complete - 1:
    fail("the cut trace stops at epoch %d, but complete segments reach epoch %d"
         % (cut_epochs[-1], last_complete))
if cut_epochs[-1] >= max(full_epochs):
    fail("the cut trace reports epoch %d, beyond what was kept (whole trace ends at %d)"
         % (cut_epochs[-1], max(full_epochs)))
keys = ("allocs", "frees", "alloc_bytes", "free_bytes", "live_count", "live_bytes")
for n in cut_epochs[:-1]:
    for k in keys:
        expect("epoch %d %s, cut vs whole trace" % (n, k), cut_by_number[n][k], full_epochs[n][k])
if not field(cut, "warnings"):
    fail("no warning that the trace was cut short")
top = field(cut, "growth")[0]
if not top["stack"][0].startswith("remember_session"):
    fail("top growth entry of the cut trace is not remember_session: %s" % top["stack"][:2])
print("cut at byte %d: %d epochs kept (of %d), identical to the whole trace; warning: %s"
      % (limit, len(cut_epochs), len(full_epochs), cut["warnings"][0]))
PY
