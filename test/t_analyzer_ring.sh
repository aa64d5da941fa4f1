#!/bin/sh
# A wrapped ring: the oldest segments are overwritten, the newest come first in the file and
# the remains of an overwritten one lie in between.  The analyzer must order by sequence,
# start from the first kept segment's carry, count frees of objects allocated before it from
# their own fields, and give the same growth as the events imply.
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh

python3 - "$WORK" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
T = sys.argv[1]

def addr(e, i):
    return 0x100000 + e * 0x1000 + i * 64

def segment(s):
    # Stack 5: two 32-byte objects per epoch, each epoch frees the first one of two epochs
    # before.  Stack 6: one 100-byte temporary per epoch.  Epoch = seq.
    live5 = 2 * s - max(0, s - 2)
    recs = mktrace.prelude(s, s, carry=(live5, 32 * live5, [[5, live5, 32 * live5]] if live5 else []))
    recs += [["stack", 5, [0x1000, 0x2000]], ["stack", 6, [0x3000]], ["thread", 1], ["epoch", s]]
    recs += [["alloc", 0, addr(s, 0), 32, 0, 5], ["alloc", 0, addr(s, 1), 32, 0, 5]]
    recs += [["alloc", 0, 0x900000, 100, 0, 6], ["free", 0, 0x900000, 100, 0, 6, 0]]
    if s >= 2:
        recs.append(["free", 0, addr(s - 2, 0), 32, 0, 5, 2])
    end_live = 2 * (s + 1) - max(0, s - 1)
    recs.append(["epoch_end", {"epoch": s, "allocs": 3, "frees": 1 + (s >= 2),
                               "alloc_bytes": 164, "free_bytes": 100 + 32 * (s >= 2),
                               "live_count": end_live, "live_bytes": 32 * end_live}])
    if s == 5:
        recs.append(["exit", 1, 0])
    return {"seq": s, "first_epoch": s, "last_epoch": s, "records": recs}

segs = [segment(s) for s in range(6)]
size2 = len(mktrace.segment_bytes(segs[2]))
open(os.path.join(T, "wrapped"), "wb").write(mktrace.build(
    {"segments": segs, "layout": [4, 5, {"partial": 2, "bytes": size2 - 20}, 3]}))
open(os.path.join(T, "shuffled"), "wb").write(mktrace.build(
    {"segments": segs, "layout": [3, 0, 5, 1, 4, 2]}))
open(os.path.join(T, "gap"), "wb").write(mktrace.build(
    {"segments": [segs[i] for i in (0, 1, 3, 4, 5)]}))
PY

for f in wrapped shuffled gap; do
    "$ANALYZE" --json "$WORK/$f" >"$WORK/$f.json" 2>"$WORK/err" || fail "$f: analyzer failed: $(head -1 "$WORK/err")"
done
python3 - "$WORK" <<'PY'
import json, os, sys
T = sys.argv[1]
def fail(msg):
    print("t_analyzer_ring: " + msg)
    sys.exit(1)
def near(a, b):
    return abs(a - b) < 1e-6
def load(name):
    return json.load(open(os.path.join(T, name + ".json")))

for name in ("wrapped", "gap"):
    d = load(name)
    m = d["metadata"]
    if (m["segments_used"], m["first_seq"], m["last_seq"], m["segments_dropped"], m["first_epoch"]) != (3, 3, 5, 3, 3):
        fail("%s: metadata %s" % (name, m))
    t = d["totals"]
    if (t["allocs"], t["frees"], t["alloc_bytes"], t["free_bytes"]) != (9, 6, 3 * 164, 300 + 96):
        fail("%s: totals %s" % (name, t))
    # live at the end: 6 allocated in the trace minus 1 freed, plus 5 carried minus 2 freed
    if d["leaked_at_exit"] != {"count": 8, "bytes": 256}:
        fail("%s: leaked_at_exit %s" % (name, d["leaked_at_exit"]))
    g = {s["stack_id"]: s for s in d["growth"]}
    s5 = g[5]
    if (s5["live_count"], s5["live_bytes"]) != (8, 256):
        fail("%s: stack 5 live %s/%s" % (name, s5["live_count"], s5["live_bytes"]))
    if not (near(s5["count_per_epoch"], 1) and near(s5["bytes_per_epoch"], 32) and near(s5["r2"], 1)):
        fail("%s: stack 5 growth %s" % (name, s5))
    if s5["lifetime"]["2-3"] != 3 or s5["lifetime"]["never"] != 5:
        fail("%s: stack 5 lifetimes %s" % (name, s5["lifetime"]))
    if [e["live_count"] for e in d["epochs"]] != [6, 7, 8]:
        fail("%s: epoch live counts %s" % (name, [e["live_count"] for e in d["epochs"]]))
    w = d["warnings"]
    if not any("starts at segment 3" in x for x in w):
        fail("%s: no warning about the missing older segments: %s" % (name, w))
    if any("disagree" in x or "carry a live state" in x or "never allocated" in x for x in w):
        fail("%s: consistency warning on a consistent trace: %s" % (name, w))
if not any("damaged" in x for x in load("wrapped")["warnings"]):
    fail("wrapped: the overwritten remains should be reported as damaged")
if not any("not used" in x for x in load("gap")["warnings"]):
    fail("gap: no warning about segments before the gap")

d = load("shuffled")
m = d["metadata"]
if (m["segments_used"], m["first_seq"], m["segments_dropped"]) != (6, 0, 0):
    fail("shuffled: metadata %s" % m)
if d["leaked_at_exit"] != {"count": 8, "bytes": 256} or d["totals"]["allocs"] != 18:
    fail("shuffled: %s %s" % (d["leaked_at_exit"], d["totals"]))
s5 = [s for s in d["growth"] if s["stack_id"] == 5][0]
# the fit leaves out epoch 5, the tail that the exit ended (docs/analyzer.md)
ys = [2 * (e + 1) - max(0, e - 1) for e in range(5)]          # 2, 4, 5, 6, 7
mx, my = 2.0, sum(ys) / 5
sxy = sum((x - mx) * (y - my) for x, y in enumerate(ys))
sxx = sum((x - mx) ** 2 for x in range(5))
syy = sum((y - my) ** 2 for y in ys)
if not (near(s5["count_per_epoch"], sxy / sxx) and near(s5["r2"], sxy * sxy / (sxx * syy))):
    fail("shuffled: stack 5 growth %s, want %s" % (s5["count_per_epoch"], sxy / sxx))
if s5["lifetime"]["never"] != 8 or s5["lifetime"]["2-3"] != 4:
    fail("shuffled: stack 5 lifetimes %s" % s5["lifetime"])
if d["warnings"]:
    fail("shuffled: unexpected warnings %s" % d["warnings"])
PY
