#!/bin/sh
# Growth, lifetimes and per-epoch figures of a synthetic trace whose answers are known exactly:
# one 48-byte leak per epoch over 50 epochs, a temporary freed in its own epoch, and objects
# that live exactly 1 and 3 epochs.
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh

python3 - "$WORK/trace" <<'PY'
import sys
sys.path.insert(0, "test/tools")
import mktrace
recs = mktrace.prelude(0, 0, modules=[[1, 0, 0x400000, 0x500000, "", "/nonexistent/leaky"]])
recs += [["stack", 7, [0x401000, 0x402000]], ["stack", 9, [0x403000]],
         ["stack", 11, [0x404000]], ["stack", 13, [0x405000]], ["thread", 100]]
for e in range(50):
    recs.append(["epoch", e])
    recs.append(["alloc", 0, 0x900000 + e * 64, 48, 8, 7])          # leaked
    recs.append(["alloc", 0, 0x10000, 100, 4, 9])                   # temporary
    recs.append(["free", 0, 0x10000, 100, 4, 9, 0])
    if e >= 1:                                                      # lives 1 epoch
        recs.append(["free", 0, 0x20000 + (e - 1) * 32, 16, 0, 11, 1])
    recs.append(["alloc", 0, 0x20000 + e * 32, 16, 0, 11])
    if e >= 3:                                                      # lives 3 epochs
        recs.append(["free", 0, 0x30000 + (e - 3) * 32, 24, 0, 13, 3])
    recs.append(["alloc", 0, 0x30000 + e * 32, 24, 0, 13])
    live_count = (e + 1) + 1 + min(e + 1, 3)
    live_bytes = 48 * (e + 1) + 16 + 24 * min(e + 1, 3)
    allocs = 4
    frees = 1 + (e >= 1) + (e >= 3)
    recs.append(["epoch_end", {"epoch": e, "wall_ns": 1000000 + 1000 * e, "rss": (1 << 20) + 4096 * e,
                               "allocs": allocs, "frees": frees,
                               "alloc_bytes": 48 + 100 + 16 + 24,
                               "free_bytes": 100 + 16 * (e >= 1) + 24 * (e >= 3),
                               "live_count": live_count, "live_bytes": live_bytes}])
recs.append(["exit", 1, 0])
desc = {"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": 49, "records": recs}]}
open(sys.argv[1], "wb").write(mktrace.build(desc))
PY

"$ANALYZE" --json "$WORK/trace" >"$WORK/out.json" 2>"$WORK/err" || fail "analyzer failed: $(head -1 "$WORK/err")"
python3 - "$WORK/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def fail(msg):
    print("t_analyzer_growth: " + msg)
    sys.exit(1)
def near(a, b):
    return abs(a - b) < 1e-6
t = d["totals"]
want = {"allocs": 200, "frees": 50 + 49 + 47, "alloc_bytes": 50 * 188,
        "free_bytes": 5000 + 49 * 16 + 47 * 24, "unknown_frees": 0}
for k, v in want.items():
    if t[k] != v:
        fail("totals.%s = %s, want %s" % (k, t[k], v))
if d["leaked_at_exit"] != {"count": 50 + 1 + 3, "bytes": 2400 + 16 + 72}:
    fail("leaked_at_exit = %s" % d["leaked_at_exit"])
sites = {s["stack_id"]: s for s in d["growth"]}
leak = d["growth"][0]
if leak["stack_id"] != 7:
    fail("top growth is stack %s, want the leak (7)" % leak["stack_id"])
if not (near(leak["bytes_per_epoch"], 48) and near(leak["r2"], 1) and near(leak["count_per_epoch"], 1)):
    fail("leak growth %s B/epoch r2 %s" % (leak["bytes_per_epoch"], leak["r2"]))
if leak["lifetime"]["never"] != 50 or sum(leak["lifetime"].values()) != 50:
    fail("leak lifetimes %s" % leak["lifetime"])
if leak["live_count"] != 50 or leak["live_bytes"] != 2400 or leak["allocs"] != 50:
    fail("leak live %s/%s allocs %s" % (leak["live_count"], leak["live_bytes"], leak["allocs"]))
if not leak["stack"] or not leak["stack"][0].startswith("leaky+0x401000"):
    fail("leak frames %s" % leak["stack"])
tmp = sites[9]
if tmp["lifetime"]["same"] != 50 or not near(tmp["bytes_per_epoch"], 0) or tmp["live_count"] != 0:
    fail("temporary: %s" % tmp)
one = sites[11]
if one["lifetime"]["1"] != 49 or one["lifetime"]["never"] != 1:
    fail("1-epoch lifetimes %s" % one["lifetime"])
three = sites[13]
if three["lifetime"]["2-3"] != 47 or three["lifetime"]["never"] != 3:
    fail("3-epoch lifetimes %s" % three["lifetime"])
if [s["stack_id"] for s in d["growth"]][:1] != [7] or \
   any(a["bytes_per_epoch"] < b["bytes_per_epoch"] for a, b in zip(d["growth"], d["growth"][1:])):
    fail("growth not sorted by bytes_per_epoch")
if d["lifetime"]["same"] != 50 or d["lifetime"]["never"] != 54:
    fail("global lifetimes %s" % d["lifetime"])
ep = d["epochs"]
if len(ep) != 50 or ep[0]["epoch"] != 0 or ep[-1]["epoch"] != 49:
    fail("epochs rows %d" % len(ep))
e10 = ep[10]
if (e10["allocs"], e10["frees"], e10["live_count"], e10["live_bytes"], e10["wall_ns"], e10["rss_bytes"]) != \
   (4, 3, 11 + 1 + 3, 48 * 11 + 16 + 72, 1010000, (1 << 20) + 40960):
    fail("epoch 10 row %s" % e10)
tr = d["trends"]
xs = list(range(49))  # the trends leave out epoch 49, the tail that the exit ended
ys = [48 * (x + 1) + 16 + 24 * min(x + 1, 3) for x in xs]
mx, my = sum(xs) / 49, sum(ys) / 49
slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
if abs(tr["live_bytes_per_epoch"] - slope) > 1e-6:
    fail("trend live %s, want %s" % (tr["live_bytes_per_epoch"], slope))
if not near(tr["rss_bytes_per_epoch"], 4096) or not near(tr["wall_ns_per_epoch"], 1000):
    fail("trends %s" % tr)
if tr["duration_vs_live_correlation"] < 0.99:
    fail("duration/live correlation %s" % tr["duration_vs_live_correlation"])
m = d["metadata"]
if (m["events"], m["segments_used"], m["first_epoch"], m["last_epoch"], m["exit"]["how"]) != (True, 1, 0, 49, "normal"):
    fail("metadata %s" % m)
bad = [w for w in d["warnings"] if "disagree" in w or "never" in w or "exit" in w]
if bad:
    fail("unexpected warning: %s" % bad[0])
PY

"$ANALYZE" "$WORK/trace" >"$WORK/out.txt" 2>"$WORK/err" || fail "text report failed"
grep -q "^  #1 48B/epoch (+1 objects/epoch, r2 1.00)" "$WORK/out.txt" || fail "text report lacks the leak line"
# 50 epochs: the table keeps its telling rows (the start, the end) and draws the rest
grep -q "^Epochs (50; the start, the most live bytes and the end, --all-epochs for every row):" "$WORK/out.txt" &&
    grep -Eq "^  start +0 " "$WORK/out.txt" && grep -Eq "^  end +49 " "$WORK/out.txt" &&
    grep -q "^  live B .*88 \.\. 2\.4Ki$" "$WORK/out.txt" ||
    fail "50 epochs should show the start and end rows and a sparkline of live bytes"
"$ANALYZE" --all-epochs "$WORK/trace" >"$WORK/all.txt" 2>"$WORK/err" || fail "--all-epochs text report failed"
[ "$(sed -n '/^Epochs (50):/,/^$/p' "$WORK/all.txt" | grep -Ec '^ +[0-9]+ +[0-9]+ ')" -eq 50 ] ||
    fail "--all-epochs should show every one of the 50 epochs"
[ ! -s "$WORK/err" ] || fail "text report wrote to stderr: $(head -1 "$WORK/err")"

# A slope of a thousand objects an epoch or more is printed whole (a server's 2000 SETs an
# epoch), not rounded to one digit by %g ("+1e+03").
python3 - "$WORK/many" <<'PY'
import sys
sys.path.insert(0, "test/tools")
import mktrace
recs = mktrace.prelude(0, 0, modules=[[1, 0, 0x400000, 0x500000, "", "/nonexistent/leaky"]])
recs += [["stack", 7, [0x401000]], ["thread", 100]]
for e in range(6):
    recs.append(["epoch", e])
    for i in range(1234):
        recs.append(["alloc", 0, 0x1000000 + (e * 1234 + i) * 16, 16, 0, 7])
recs.append(["exit", 1, 0])
desc = {"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": 5, "records": recs}]}
open(sys.argv[1], "wb").write(mktrace.build(desc))
PY
"$ANALYZE" "$WORK/many" >"$WORK/many.txt" 2>"$WORK/err" || fail "text report of 1234 a epoch failed"
grep -q "^  #1 19.3KiB/epoch (+1234 objects/epoch, r2 1.00)" "$WORK/many.txt" ||
    fail "callsite of 1234 objects an epoch: $(grep -m1 '^  #1 .*objects/epoch' "$WORK/many.txt")"
grep -q "^  #1 leaky+0x401000: 19.3KiB/epoch (+1234 objects/epoch" "$WORK/many.txt" ||
    fail "function of 1234 objects an epoch: $(grep -m1 '^  #1 .*objects/epoch' "$WORK/many.txt")"
"$ANALYZE" --html "$WORK/many" -o "$WORK/many.html" 2>"$WORK/err" || fail "html of 1234 a epoch failed"
[ "$(grep -c '<td>+1234</td>' "$WORK/many.html")" = 2 ] || fail "html objects/epoch: $(grep -o '<td>+1[^<]*</td>' "$WORK/many.html" | head -2)"
exit 0
