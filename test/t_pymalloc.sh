#!/bin/sh
# CPython's pymalloc traced by default (no PYTHONMALLOC): test/programs/py_grow.py keeps
# 20,000 tuples of (turn, j, float(j)) a turn for 40 turns, 800,000 tuples and their numbers,
# all in pymalloc's arenas, an epoch a turn (SIGUSR2).  For Debian's python3.11 (non-PIE,
# stripped, built with LTO and profile feedback, which copies PyObject_Malloc into its
# callers) and pyenv's 3.11.7, 3.12.1 and 3.13.0 (a shared libpython; a machine without them
# says NOT RUN for each and checks the rest):
#   - the output and status unchanged, libchurn silent on stderr (but for 3.13's line that
#     it traces the mimalloc libpython carries);
#   - the allocator record names "CPython's pymalloc in <interpreter> via PyMem_SetAllocator";
#   - the growth of the live set per epoch, most often, equals the growth per turn, most
#     often, of the bytes tracemalloc traces and of the blocks pymalloc counts
#     (sys.getallocatedblocks()) in a run of the same script untraced with tracemalloc
#     (2,564,792 B in 59,745 blocks for each): exactly;
#   - no unknown frees, no dropped events, no warning that growth is not traced;
#   - the RSS split counts pymalloc's arenas in the heap: at most a quarter of the epochs'
#     books are stale (a late reading; without the arenas every epoch's would be), and
#     what lies outside the heap at the last turn is under half the live bytes (the arenas
#     alone are more than the live bytes).
. test/lib.sh

TURNS=40
[ -x /usr/bin/python3.11 ] || fail "/usr/bin/python3.11 is missing (Debian 12's python3.11)"
pythons_with_frames

n=0
for py in $pythons; do
    n=$((n + 1))
    PYTHONHASHSEED=0 timeout 120 "$py" test/programs/py_grow.py $TURNS tracemalloc \
        >"$WORK/tm$n.out" 2>&1 || fail "$py with tracemalloc failed: $(tail -n 1 "$WORK/tm$n.out")"
    PYTHONHASHSEED=0 timeout 120 "$py" test/programs/py_grow.py $TURNS >"$WORK/plain$n.out" \
        2>&1 || true # SIGUSR2 ends it untraced
    PYTHONHASHSEED=0 CHURN_EPOCH_SIGNAL=USR2 traced "$WORK/py$n.zst" "$WORK/py$n.out" \
        "$py" test/programs/py_grow.py $TURNS
    grep -qx 800000 "$WORK/py$n.out" || fail "$py under the shim printed $(cat "$WORK/py$n.out")"
    # (3.13's libpython carries mimalloc, unused by default, traced by its own names)
    ! grep "libchurn:" "$WORK/py$n.out.err" | grep -qv "tracing mimalloc in .*/libpython3" ||
        fail "$py: libchurn spoke on stderr: $(grep -m1 libchurn: "$WORK/py$n.out.err")"
    analyze "$WORK/py$n.zst" "$WORK/py$n.json"
    check "$WORK/py$n.json" "$WORK/tm$n.out" "$py" <<'PY'
import collections, sys
from churncheck import *
report, tm, py = load(sys.argv[1]), sys.argv[2], sys.argv[3]
name = field(report, "metadata", "allocator")
if "CPython's pymalloc in " not in name or " via PyMem_SetAllocator" not in name:
    fail("%s: the allocator record does not name pymalloc: %s" % (py, name))
turns = collections.Counter(tuple(map(int, l.split())) for l in open(tm))
rows = field(report, "epochs")
grown = collections.Counter((b["live_bytes"] - a["live_bytes"], b["live_count"] - a["live_count"])
                            for a, b in zip(rows, rows[1:]))
(want, seen), (got, times) = turns.most_common(1)[0], grown.most_common(1)[0]
expect("%s: the live set's growth per epoch, most often (bytes, blocks), against tracemalloc's "
       "bytes and sys.getallocatedblocks() per turn" % py, got, want)
# 20,000 tuples, 20,000 floats, 19,743 ints (those under 257 are shared)
if got[1] < 59743:
    fail("%s: %d blocks a turn, fewer than the tuples and their numbers" % (py, got[1]))
t = field(report, "totals")
expect("%s: unknown frees, dropped events" % py, (t["unknown_frees"], t["dropped_events"]), (0, 0))
for w in field(report, "warnings"):
    if "not traced" in w:
        fail("%s: %s" % (py, w))
frag = [f for f in field(report, "fragmentation") if f["free_resident_bytes"] is not None]
# Arenas left out of the heap would make every epoch's books stale (they would count less in
# use than the live set holds); a reading the writer takes late, after the next turn grew the
# heap, makes one stale now and then on a loaded machine (docs/fragmentation.md).
stale = [f["epoch"] for f in field(report, "fragmentation") if f["books_stale"]]
if len(stale) > len(rows) // 4:
    fail("%s: %d of %d epochs' books are stale (%r): pymalloc's arenas are not in the heap"
         % (py, len(stale), len(rows), stale))
last = frag[-1]
if last["outside_heap_bytes"] * 2 > last["live_bytes"]:
    fail("%s: epoch %d: %d bytes outside the heap for %d live: pymalloc's arenas are not in "
         "the heap" % (py, last["epoch"], last["outside_heap_bytes"], last["live_bytes"]))
print("%s: %d B in %d blocks a turn (%d of %d epochs; tracemalloc: %d of %d turns); epoch %d: "
      "%.1f MiB live, %.1f MiB outside the heap"
      % (py, got[0], got[1], times, len(rows) - 1, seen, sum(turns.values()), last["epoch"],
         last["live_bytes"] / 1048576, last["outside_heap_bytes"] / 1048576))
PY
done
