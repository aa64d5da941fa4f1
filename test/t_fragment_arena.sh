#!/bin/sh
# Arenas of an allocator traced beside the one behind malloc (CHURN_MAP_ARENA, version 6:
# CPython's pymalloc) in the fragmentation estimate, to the byte, on traces written by the
# independent encoder (test/tools/mktrace.py): under the jemalloc model, objects inside an
# arena sit in its 16 KiB pools, not in the slabs the model would compute from their
# addresses; one outside it, and one at an address of the arena once it is given back, in the
# model's slabs; the arena's bytes (pymalloc.arena_bytes) are part of the heap; and in a
# version 5 trace such a record is malformed.
LIB_ANALYZER_ONLY=1
. test/lib.sh

python3 - "$WORK" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
W = sys.argv[1]

ARENA, POOL = 0x7f0000000000, 16384
# A and B share the arena's second pool, C is in its fifth; D, outside it, is object 0 of the
# jemalloc slab of class 48 at 0x100000 (12,288 B); E, at A's address once the arena is given
# back, is placed by the model too: object 0 of the class-48 slab there.
A, B, C, D = ARENA + POOL + 32, ARENA + POOL + 96, ARENA + 4 * POOL + 16, 0x100000
je = ("jemalloc", 4096, ["stats.resident", "stats.active", "stats.metadata",
                         "pymalloc.arena_bytes"])
stacks = [["stack", 1, [0x10]], ["stack", 2, [0x20]]]

def trace(name, version):
    recs = mktrace.prelude(0, 0, allocator=je) + stacks + [
        ["thread", 1], ["epoch", 0],
        ["map", 5, ARENA, 1 << 20, POOL, 0, 0, True],
        ["alloc", 0, A, 40, 8, 1], ["alloc", 0, B, 60, 4, 1], ["alloc", 0, C, 500, 12, 1],
        ["alloc", 0, D, 40, 8, 2],
        ["epoch_end", {"epoch": 0, "rss": 2000000, "counters": [30000, 24576, 1000, 1 << 20]}],
        ["epoch", 1],
        ["free", 0, A, 40, 8, 1, 1], ["free", 0, B, 60, 4, 1, 1], ["free", 0, C, 500, 12, 1, 1],
        ["map", 5, ARENA, 1 << 20, 0, 0, 0, True],
        ["alloc", 0, ARENA, 40, 8, 2],
        ["epoch_end", {"epoch": 1, "rss": 2000000, "counters": [30000, 24576, 1000, 0]}],
        ["exit", 1, 0]]
    open(os.path.join(W, name), "wb").write(mktrace.build(
        {"header": {"version": version},
         "segments": [{"seq": 0, "version": version, "first_epoch": 0, "last_epoch": 1,
                       "records": recs}]}))

trace("arena", 6)
trace("arena5", 5)
PY

analyze "$WORK/arena" "$WORK/arena.json"
analyze "$WORK/arena5" "$WORK/arena5.json"

check "$WORK/arena.json" <<'PY'
import sys
from churncheck import *
rows = {r["epoch"]: r for r in field(load(sys.argv[1]), "fragmentation")}
r0, r1 = rows[0], rows[1]
# two pools of the arena (A and B's, C's) and D's slab
expect("epoch 0 (span bytes, spans)", (r0["span_bytes"], r0["spans"]), (2 * 16384 + 12288, 3))
expect("epoch 0 pinned bytes", r0["pinned_bytes"], 2 * 16384 + 12288 - (48 + 64 + 512 + 48))
expect("epoch 0 heap: jemalloc's resident and the arena's bytes", r0["heap_bytes"],
       30000 + (1 << 20))
# the arena is gone: the object at its old address is the model's (object 0 of its slab)
expect("epoch 1 (span bytes, spans)", (r1["span_bytes"], r1["spans"]), (2 * 12288, 2))
print("arena pools exact: %d span bytes in 3 units, then the model's slabs" % r0["span_bytes"])
PY
check "$WORK/arena5.json" <<'PY'
import sys
from churncheck import *
w = field(load(sys.argv[1]), "warnings")
if not any(x.startswith("segment 0: malformed record (tag 0x4d)") for x in w):
    fail("a version 5 trace with an arena record is not said malformed: %s" % w)
print("version 5 with an arena record: malformed, the rest of its segment ignored")
PY
