#!/bin/sh
# Objects a trace carries in without their addresses (test/programs/carried_heap.c): a forked
# child's copies of its parent's 20,000 blocks of 1000 B, and blocks whose allocations were in
# segments a 2 MiB ring overwrote.  The live-vs-fragmented rows count them live (unplaced:
# the model has no address to place them at): every row's live bytes equal the epochs
# table's at the same epoch, the last one's equal what the program itself counts live, the
# unplaced bytes are the carried blocks', and with glibc's books read the residual (heap less
# everything else) is at most the carried blocks' chunk overhead, 32 B each, not their 19 MiB.
. test/lib.sh

build_c carried_heap test/programs/carried_heap.c

mkdir -p "$WORK/fork"
traced "$WORK/fork/t.zst" "$WORK/fork.out" "$WORK/carried_heap" fork "$WORK/child.out"
pid=$(sed -n 's/^child //p' "$WORK/fork.out")
[ -n "$pid" ] && [ -f "$WORK/fork/t.$pid.zst" ] || fail "the child wrote no trace: $(ls "$WORK/fork" | tr '\n' ' ')"
analyze "$WORK/fork/t.$pid.zst" "$WORK/child.json"
"$ANALYZE" "$WORK/fork/t.$pid.zst" >"$WORK/child.txt" 2>&1 || fail "the child's text report failed"
"$ANALYZE" --html "$WORK/fork/t.$pid.zst" -o "$WORK/child.html" >/dev/null 2>&1 || fail "the child's page failed"
grep -q "were carried in without addresses" "$WORK/child.html" ||
    fail "the child's page does not say what of live was carried in"

CHURN_RING_MB=2 traced "$WORK/ring.zst" "$WORK/ring.out" "$WORK/carried_heap" ring
analyze "$WORK/ring.zst" "$WORK/ring.json"
"$ANALYZE" "$WORK/ring.zst" >"$WORK/ring.txt" 2>&1 || fail "the ring's text report failed"

check "$WORK/child.json" "$WORK/child.out" "$WORK/child.txt" "forked child" \
      "$WORK/ring.json" "$WORK/ring.out" "$WORK/ring.txt" "wrapped ring" <<'PY'
import sys
from churncheck import *
CARRIED, OVERHEAD = 20000 * 1000, 20000 * 32
for report, out, txt, what in (sys.argv[1:5], sys.argv[5:9]):
    r = load(report)
    if what == "wrapped ring" and not field(r, "metadata", "segments_dropped"):
        fail("%s: the ring overwrote no segment: nothing was carried" % what)
    live = int(open(out).read().split("live ")[1].split()[0])
    epochs = {e["epoch"]: e for e in field(r, "epochs")}
    rows = field(r, "fragmentation")
    for row in rows:
        expect("%s: epoch %d's live bytes, fragmentation row vs epochs table" % (what, row["epoch"]),
               row["live_bytes"], epochs[row["epoch"]]["live_bytes"])
        if not CARRIED <= row["unplaced_bytes"] <= row["live_bytes"]:
            fail("%s: epoch %d: %d unplaced bytes, the carried blocks are %d"
                 % (what, row["epoch"], row["unplaced_bytes"], CARRIED))
    # the program's count is of the epoch it began after its work (the ring's last epoch
    # has stdout's buffer on top)
    ends = [row for row in rows if row["live_bytes"] == live]
    if not ends:
        fail("%s: no row's live bytes are the program's own count %d (last rows: %s)"
             % (what, live, [(x["epoch"], x["live_bytes"]) for x in rows[-3:]]))
    read = [row for row in rows if row["free_resident_bytes"] is not None and not row["books_stale"]]
    if not read:
        fail("%s: no epoch has fresh books" % what)
    worst = max(abs(row["residual_bytes"]) for row in read)
    if worst > OVERHEAD:
        fail("%s: a residual of %d bytes with the carried blocks counted live (bound %d)"
             % (what, worst, OVERHEAD))
    if "carried in" not in open(txt).read():
        fail("%s: the text report does not say what of live was carried in" % what)
    print("%s: %d rows count the %d carried bytes live, %d read books leave at most %d B of residual"
          % (what, len(rows), CARRIED, len(read), worst))
PY
