#!/bin/sh
# Who pins, and when (test/programs/pin_teardown.c under glibc): the pinning rankings are taken
# before the teardown (the epoch the exit ended, which frees everything) and at the epoch of
# the most pinned bytes, never at the exit's state.  Here the most pinned bytes come right
# after a collection frees 15 of every 16 survivors and leaves their pages in use; the
# survivors then are the 200 the collection left plus the 8 of that epoch; before the
# teardown there are 600; at the end none.
. test/lib.sh

build_c pin_teardown test/programs/pin_teardown.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/pin_teardown"
analyze "$WORK/trace.zst" "$WORK/report.json"
"$ANALYZE" "$WORK/trace.zst" >"$WORK/report.txt" 2>&1 || fail "churn-analyze text report failed"

check "$WORK/report.json" "$WORK/report.txt" <<'PY'
import sys
from churncheck import *
report, text = load(sys.argv[1]), open(sys.argv[2]).read()
epochs = 150
def fill_live(sites):
    return sum(c["live_count"] for c in sites if c["stack"][0].startswith("fill ("))
pinning = field(report, "pinning")
before = field(pinning, "before_teardown")
expect("ranking before the teardown: epoch", before["epoch"], epochs)
expect("survivors of fill before the teardown", fill_live(before["callsites"]), 600)
if not before["callsites"][0]["stack"][0].startswith("fill ("):
    fail("the top pinning callsite before the teardown is not fill: %s" % before["callsites"][0]["stack"][:1])
expect("survivors of fill at the end", fill_live(field(report, "fragmentation_callsites")), 0)
fill_row = next(f for f in field(report, "functions") if f["function"] == "fill")
pinned = sum(c["pinned_bytes"] for c in before["callsites"] if c["stack"][0].startswith("fill ("))
if abs(fill_row["pinned_bytes"] - pinned) > 1:
    fail("fill's function row pins %r, its callsites before the teardown %r" % (fill_row["pinned_bytes"], pinned))
# The peak, found independently from the per-epoch rows (the teardown left out).
rows = [r for r in field(report, "fragmentation") if r["epoch"] <= epochs]
most = max(rows, key=lambda r: r["pinned_bytes"])
peak = field(pinning, "peak")
if peak is None:
    fail("no pinning ranking at the peak, which is at epoch %d" % most["epoch"])
expect("ranking at the most pinned bytes: epoch", peak["epoch"], most["epoch"])
if not 101 <= peak["epoch"] < epochs:
    fail("the most pinned bytes at epoch %d, not after the collection" % peak["epoch"])
expect("survivors of fill at the peak", fill_live(peak["callsites"]), 200 + 8 * (peak["epoch"] - 100))
# one block, both rankings: each row with its figures at the most pinned epoch as well
line = ("Who pins: callsites whose survivors pin the most span bytes (before the teardown, at "
        "epoch %d; and at epoch %d, the most pinned bytes):" % (epochs, peak["epoch"]))
if line not in text or text.count("Who pins:") != 1:
    fail("the text report lacks %r, or has more than one block of who pins" % line)
block = text[text.index(line):].split("\n\n")[0]
if not any(l.startswith("  #1 pinned ") and "; at epoch %d: pinned " % peak["epoch"] in l
           for l in block.splitlines()):
    fail("who pins: the first row does not give its figures at epoch %d:\n%s" % (peak["epoch"], block))
print("pinning before the teardown at epoch %d (600 survivors), at the peak epoch %d (%d), none at the end"
      % (before["epoch"], peak["epoch"], fill_live(peak["callsites"])))
PY
