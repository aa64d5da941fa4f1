#!/bin/sh
# Events drained per thread arrive out of order: an address is reused (allocated on one
# thread) before the free of its previous occupant (on another) appears, and events of an
# older epoch arrive late.  The live set must pair every free with its own object.
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh

python3 - "$WORK" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
T = sys.argv[1]
P, Q = 0x5000, 0x6000
recs = mktrace.prelude(0, 0) + [["stack", 1, [0x10]], ["stack", 2, [0x20]], ["stack", 3, [0x30]]]
recs += [["thread", 1], ["epoch", 0], ["alloc", 0, P, 40, 0, 1]]
# epoch 1: thread 2 reuses P before thread 1's free of the old occupant is drained
recs += [["thread", 2], ["epoch", 1], ["alloc", 0, P, 80, 0, 2],
         ["thread", 1], ["epoch", 1], ["free", 0, P, 40, 0, 1, 1]]
# epoch 2: same at Q, and the newer occupant is freed before the older one
recs += [["thread", 1], ["epoch", 2], ["alloc", 0, Q, 24, 0, 3], ["free", 0, P, 80, 0, 2, 1],
         ["thread", 2], ["epoch", 2], ["alloc", 0, Q, 56, 0, 2], ["free", 0, Q, 56, 0, 2, 0],
         ["thread", 1], ["epoch", 2], ["free", 0, Q, 24, 0, 3, 0]]
# epoch 3, then a late event of epoch 2 from thread 3
recs += [["epoch", 3], ["alloc", 0, 0x7000, 8, 0, 3],
         ["thread", 3], ["epoch", 2], ["alloc", 0, 0x8000, 16, 0, 1],
         ["thread", 1], ["epoch", 3], ["exit", 1, 0]]
open(os.path.join(T, "reorder"), "wb").write(mktrace.build(
    {"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": 3, "records": recs}]}))

# The free of an object comes before its allocation: thread 2 freed what thread 1 allocated
# in the same epoch, and thread 2's events were drained first.  No warning, nothing left live.
R = 0x9000
recs = mktrace.prelude(0, 0) + [["stack", 1, [0x10]], ["thread", 2], ["epoch", 0],
        ["free", 0, R, 32, 0, 1, 0], ["thread", 1], ["epoch", 0], ["alloc", 0, R, 32, 0, 1],
        ["exit", 1, 0]]
open(os.path.join(T, "early"), "wb").write(mktrace.build(
    {"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": 0, "records": recs}]}))

# A free whose fields match nothing at a live address: removed, but reported.
recs = mktrace.prelude(0, 0) + [["stack", 1, [0x10]], ["thread", 1], ["epoch", 0],
        ["alloc", 0, P, 40, 0, 1], ["free", 0, P, 48, 0, 1, 0], ["exit", 1, 0]]
open(os.path.join(T, "mismatch"), "wb").write(mktrace.build(
    {"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": 0, "records": recs}]}))
PY

for f in reorder mismatch early; do
    "$ANALYZE" --json "$WORK/$f" >"$WORK/$f.json" 2>"$WORK/err" || fail "$f: analyzer failed: $(head -1 "$WORK/err")"
done
python3 - "$WORK" <<'PY'
import json, os, sys
T = sys.argv[1]
def fail(msg):
    print("t_analyzer_reorder: " + msg)
    sys.exit(1)
d = json.load(open(os.path.join(T, "early.json")))
if d["warnings"]:
    fail("early: warnings when a free precedes its own allocation: %s" % d["warnings"])
if d["leaked_at_exit"] != {"count": 0, "bytes": 0}:
    fail("early: leaked_at_exit %s, the object was freed" % d["leaked_at_exit"])
d = json.load(open(os.path.join(T, "reorder.json")))
if d["warnings"]:
    fail("warnings on a consistent reordered trace: %s" % d["warnings"])
t = d["totals"]
if (t["allocs"], t["frees"], t["alloc_bytes"], t["free_bytes"]) != (6, 4, 224, 200):
    fail("totals %s" % t)
if d["leaked_at_exit"] != {"count": 2, "bytes": 24}:
    fail("leaked_at_exit %s" % d["leaked_at_exit"])
g = {s["stack_id"]: s for s in d["growth"]}
if g[1]["lifetime"]["1"] != 1 or g[1]["lifetime"]["never"] != 1:
    fail("stack 1 lifetimes %s" % g[1]["lifetime"])
if g[2]["lifetime"]["1"] != 1 or g[2]["lifetime"]["same"] != 1 or g[2]["live_count"] != 0:
    fail("stack 2 %s" % g[2])
if g[3]["lifetime"]["same"] != 1 or g[3]["lifetime"]["never"] != 1:
    fail("stack 3 lifetimes %s" % g[3]["lifetime"])
ep = {e["epoch"]: e for e in d["epochs"]}
if ep[2]["allocs"] != 3 or ep[3]["allocs"] != 1:
    fail("the late event must count in its own epoch: %s" % [(e["epoch"], e["allocs"]) for e in d["epochs"]])
if [ep[e]["live_count"] for e in range(4)] != [1, 1, 0, 2]:
    fail("epoch live counts %s" % [ep[e]["live_count"] for e in range(4)])

d = json.load(open(os.path.join(T, "mismatch.json")))
if not any("differ from the live object" in w for w in d["warnings"]):
    fail("mismatch: no warning in %s" % d["warnings"])
if d["leaked_at_exit"]["count"] != 0:
    fail("mismatch: the object at the freed address should be gone: %s" % d["leaked_at_exit"])
PY
