#!/bin/sh
# --epochs A:B restricts every figure to epochs A..B; objects allocated before A still count
# as live state, events after B are ignored.
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh

python3 - "$WORK/trace" <<'PY'
import sys
sys.path.insert(0, "test/tools")
import mktrace
recs = mktrace.prelude(0, 0) + [["stack", 7, [0x10]], ["stack", 9, [0x20]], ["thread", 1]]
for e in range(50):
    recs += [["epoch", e], ["alloc", 0, 0x900000 + e * 64, 48, 0, 7],
             ["alloc", 0, 0x10000, 100, 0, 9], ["free", 0, 0x10000, 100, 0, 9, 0],
             ["epoch_end", {"epoch": e, "wall_ns": 5, "allocs": 2, "frees": 1, "alloc_bytes": 148,
                            "free_bytes": 100, "live_count": e + 1, "live_bytes": 48 * (e + 1)}]]
recs.append(["exit", 1, 0])
open(sys.argv[1], "wb").write(mktrace.build(
    {"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": 49, "records": recs}]}))
PY

window() {
    range=$1
    shift
    "$ANALYZE" --json --epochs "$range" "$WORK/trace" >"$WORK/out.json" 2>"$WORK/err" || fail "--epochs $range failed: $(head -1 "$WORK/err")"
    python3 - "$WORK/out.json" "$range" "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rng, first, last = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def fail(msg):
    print("t_analyzer_window: --epochs %s: %s" % (rng, msg))
    sys.exit(1)
n = last - first + 1
ep = [e["epoch"] for e in d["epochs"]]
if ep != list(range(first, last + 1)):
    fail("epochs %s" % ep)
if d["totals"]["allocs"] != 2 * n or d["totals"]["frees"] != n:
    fail("totals %s" % d["totals"])
if d["leaked_at_exit"] != {"count": n, "bytes": 48 * n}:
    fail("leaked_at_exit %s" % d["leaked_at_exit"])
leak = d["growth"][0]
want_slope, want_r2 = (48, 1) if n > 1 else (0, 0)   # one point has no slope
if leak["stack_id"] != 7 or abs(leak["bytes_per_epoch"] - want_slope) > 1e-6 or abs(leak["r2"] - want_r2) > 1e-9:
    fail("growth %s" % leak)
if leak["lifetime"]["never"] != n or leak["allocs"] != n or leak["live_count"] != last + 1:
    fail("leak callsite %s" % leak)
if d["epochs"][0]["live_count"] != first + 1:
    fail("live at the end of epoch %d is %s" % (first, d["epochs"][0]["live_count"]))
if [w for w in d["warnings"] if "disagree" in w]:
    fail("warnings %s" % d["warnings"])
PY
}
window 10:19 10 19
window 45: 45 49
window :4 0 4
window 7:7 7 7
window : 0 49

"$ANALYZE" --epochs 10:19 "$WORK/trace" >"$WORK/out.txt"
grep -q "window: epochs 10..19" "$WORK/out.txt" || fail "text report does not show the window"
# The window counts what it allocated, the function rows every live object: the label says so.
grep -q "^Live at the window's end, of what the window allocated: 10 objects (480B)$" "$WORK/out.txt" ||
    fail "live at the window's end: $(grep '^Live' "$WORK/out.txt")"
grep -q "^Peak: 1.0KiB requested live in 21 objects, in epoch 19$" "$WORK/out.txt" ||
    fail "peak of the window: $(grep '^Peak' "$WORK/out.txt")"
"$ANALYZE" --epochs :19 "$WORK/trace" >"$WORK/open.txt"
grep -q "^Live at the window's end: 20 objects (960B)$" "$WORK/open.txt" ||
    fail "live at the end of an open window: $(grep '^Live' "$WORK/open.txt")"
# A window past the trace's last epoch: said in the header, and no peak in an epoch outside it.
"$ANALYZE" --epochs 100:200 "$WORK/trace" >"$WORK/past.txt"
grep -q "^  window: epochs 100..200 (none of them in the trace, whose epochs are 0-49)$" "$WORK/past.txt" ||
    fail "a window past the trace: $(grep 'window' "$WORK/past.txt")"
grep -q "^Peak: none, no allocation or free in the window$" "$WORK/past.txt" ||
    fail "peak of an empty window: $(grep '^Peak' "$WORK/past.txt")"
"$ANALYZE" "$WORK/trace" | grep -q "^Live at end: 50 objects (2.3KiB)$" || fail "live at end without a window"
exit 0
