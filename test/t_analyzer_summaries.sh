#!/bin/sh
# Traces without events (CHURN_FILE_EVENTS clear) are analyzed from the epoch summaries; traces
# with events are cross-checked against them, except in epochs where events were dropped.
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh

python3 - "$WORK" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
T = sys.argv[1]

# Summaries only: stack 3 keeps 64 more bytes per epoch, stack 4 is steady at 10 objects.
recs = mktrace.prelude(0, 0, allocator=("jemalloc", 4096, ["resident", "active"]))
recs += [["stack", 3, [0x30]], ["stack", 4, [0x40]]]
for e in range(20):
    sites = [[3, 1, 0, 64, 0, e + 1, 64 * (e + 1)]]
    if e == 0:
        sites.append([4, 10, 0, 160, 0, 10, 160])
    recs.append(["epoch_end", {"epoch": e, "wall_ns": 100, "rss": 1000 + 10 * e,
                               "allocs": 1 + 10 * (e == 0), "frees": 0,
                               "alloc_bytes": 64 + 160 * (e == 0), "live_count": e + 11,
                               "live_bytes": 64 * (e + 1) + 160,
                               "classes": [[4, 1, 0, 64, 0]], "callsites": sites,
                               "counters": [5000 + e, 4000 + e]}])
recs.append(["exit", 3, 11])
open(os.path.join(T, "summaries"), "wb").write(mktrace.build(
    {"header": {"flags": 0},
     "segments": [{"seq": 0, "first_epoch": 0, "last_epoch": 19, "records": recs}]}))

# Events whose epoch 1 summary disagrees, and an epoch 2 with dropped events and a summary
# that (rightly) disagrees with the incomplete events.
def events_trace(bad_epoch_1):
    recs = mktrace.prelude(0, 0) + [["stack", 1, [0x10]], ["thread", 1]]
    for e in range(3):
        recs += [["epoch", e], ["alloc", 0, 0x1000 + e * 16, 16, 0, 1]]
        allocs = 1
        if e == 2:
            recs.append(["dropped", 5, 1])
            allocs = 6
        if e == 1 and bad_epoch_1:
            allocs = 2
        recs.append(["epoch_end", {"epoch": e, "allocs": allocs, "alloc_bytes": 16 * allocs,
                                   "live_count": e + 1, "live_bytes": 16 * (e + 1)}])
    recs.append(["exit", 1, 0])
    return mktrace.build({"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": 2, "records": recs}]})
open(os.path.join(T, "disagree"), "wb").write(events_trace(True))
open(os.path.join(T, "agree"), "wb").write(events_trace(False))
PY

for f in summaries disagree agree; do
    "$ANALYZE" --json "$WORK/$f" >"$WORK/$f.json" 2>"$WORK/err" || fail "$f: analyzer failed: $(head -1 "$WORK/err")"
done
python3 - "$WORK" <<'PY'
import json, os, sys
T = sys.argv[1]
def fail(msg):
    print("t_analyzer_summaries: " + msg)
    sys.exit(1)
def near(a, b):
    return abs(a - b) < 1e-6
d = json.load(open(os.path.join(T, "summaries.json")))
if d["metadata"]["events"] is not False or d["metadata"]["allocator"] != "jemalloc":
    fail("metadata %s" % d["metadata"])
if d["metadata"]["exit"] != {"how": "signal", "detail": 11}:
    fail("exit %s" % d["metadata"]["exit"])
t = d["totals"]
if (t["allocs"], t["frees"], t["alloc_bytes"]) != (30, 0, 20 * 64 + 160):
    fail("totals %s" % t)
if d["leaked_at_exit"] != {"count": 30, "bytes": 64 * 20 + 160}:
    fail("leaked_at_exit %s" % d["leaked_at_exit"])
g = {s["stack_id"]: s for s in d["growth"]}
if not (near(g[3]["bytes_per_epoch"], 64) and near(g[3]["r2"], 1)) or d["growth"][0]["stack_id"] != 3:
    fail("stack 3 growth %s" % g[3])
if not near(g[4]["bytes_per_epoch"], 0) or g[4]["live_count"] != 10:
    fail("stack 4 %s" % g[4])
e5 = d["epochs"][5]
if (e5["epoch"], e5["live_count"], e5["rss_bytes"], e5["counters"]) != (5, 16, 1050, {"resident": 5005, "active": 4005}):
    fail("epoch 5 row %s" % e5)
if not near(d["trends"]["rss_bytes_per_epoch"], 10):
    fail("trends %s" % d["trends"])
if d["size_classes"] != [{"max_bytes": 64, "allocs": 20, "frees": 0, "alloc_bytes": 1280, "free_bytes": 0}]:
    fail("size_classes %s" % d["size_classes"])
if d["warnings"]:
    fail("warnings %s" % d["warnings"])

d = json.load(open(os.path.join(T, "disagree.json")))
w = [x for x in d["warnings"] if "disagree" in x]
if len(w) != 1 or "1 epoch(s)" not in w[0] or "epoch 1:" not in w[0]:
    fail("disagree: want one warning about epoch 1 only: %s" % d["warnings"])
if not any("dropped 5 event" in x for x in d["warnings"]):
    fail("disagree: no warning about dropped events: %s" % d["warnings"])
d = json.load(open(os.path.join(T, "agree.json")))
if any("disagree" in x for x in d["warnings"]):
    fail("agree: epochs with dropped events must not be compared: %s" % d["warnings"])
if d["totals"]["dropped_events"] != 5:
    fail("agree: dropped_events %s" % d["totals"]["dropped_events"])
PY
