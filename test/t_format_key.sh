#!/bin/sh
# Format 8's key and delta segments (docs/format.md, "Key and delta segments"), written by the
# independent encoder (test/tools/mktrace.py):
# - one run of six segments written at version 7 (every segment defines its stacks and
#   carries every live stack) and at version 8 (segments 0 and 3 key, the others delta: no
#   stack defined again, CARRY with its totals alone) gives the same text, JSON and folded
#   reports;
# - a wrapped version 8 ring whose oldest kept segment is a delta one starts at the next key
#   segment and says which segments and epochs it did not use;
# - a delta segment that does not decode (a malformed record) makes the reader pass over the
#   delta segments after it, saying so, and go on at the next key segment;
# - a trace whose segments after a gap are all delta ones is read up to the gap, which is
#   said with the segments and epochs left out;
# - a trace with no key segment at all is refused in one line.
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh

python3 - "$WORK" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
W = sys.argv[1]
KEYS = (0, 3)

def addr(e, i):
    return 0x100000 + e * 0x1000 + i * 64

def segment(s, version, bad=False):
    # Stack 5 keeps two 32-byte objects an epoch and frees the first of two epochs before;
    # stack 6 (deep, first used in segment 1) makes a 100-byte temporary.  Epoch = seq.
    key = version < 8 or s in KEYS
    live5 = 2 * s - max(0, s - 2)
    entries = [[5, live5, 32 * live5]] if live5 and key else []
    recs = mktrace.prelude(s, s, carry=(live5, 32 * live5, entries))
    if key or s == 1:
        recs += [["stack", 5, [0x1000, 0x2000]]]
    if s >= 1 and (key or s == 1):
        recs += [["stack", 6, [0x3000, 0x3100, 0x2000]]]
    recs += [["thread", 1], ["epoch", s]]
    recs += [["alloc", 0, addr(s, 0), 32, 0, 5], ["alloc", 0, addr(s, 1), 32, 0, 5]]
    if s >= 1:
        recs += [["alloc", 0, 0x900000, 100, 0, 6], ["free", 0, 0x900000, 100, 0, 6, 0]]
    if s >= 2:
        recs.append(["free", 0, addr(s - 2, 0), 32, 0, 5, 2])
    if bad:
        recs.append(["raw", "ff"])
    end_live = 2 * (s + 1) - max(0, s - 1)
    sites = [[5, 2, int(s >= 2), 64, 32 * (s >= 2), end_live, 32 * end_live]]
    if s >= 1:
        sites.append([6, 1, 1, 100, 100, 0, 0])
    recs.append(["epoch_end", {"epoch": s, "allocs": 2 + (s >= 1), "frees": (s >= 1) + (s >= 2),
                               "alloc_bytes": 64 + 100 * (s >= 1),
                               "free_bytes": 100 * (s >= 1) + 32 * (s >= 2),
                               "live_count": end_live, "live_bytes": 32 * end_live,
                               "callsites": sites}])
    if s == 5:
        recs.append(["exit", 1, 0])
    return {"seq": s, "version": version, "first_epoch": s, "last_epoch": s,
            "delta": not key, "records": recs}

def write(name, version, segs, **more):
    d = dict({"header": {"version": version}, "segments": segs}, **more)
    open(os.path.join(W, name), "wb").write(mktrace.build(d))

for v in (7, 8):
    write("v%d" % v, v, [segment(s, v) for s in range(6)])
v8 = [segment(s, 8) for s in range(6)]
size1 = len(mktrace.segment_bytes(v8[1]))
# the ring went round: 4 and 5 over 0 and most of 1; 2 is the oldest left, a delta segment
write("wrapped", 8, v8, layout=[4, 5, {"partial": 1, "bytes": size1 - 20}, 2, 3])
write("damaged", 8, [segment(s, 8, bad=s == 1) for s in range(6)])
write("gapped", 8, [v8[i] for i in (0, 1, 4, 5)])
write("nokey", 8, [v8[i] for i in (1, 2)])
PY

for v in 7 8; do
    analyze "$WORK/v$v" "$WORK/v$v.json" --all-epochs
    "$ANALYZE" --all-epochs "$WORK/v$v" >"$WORK/v$v.txt" 2>&1 || fail "v$v: text report failed"
    "$ANALYZE" --folded "$WORK/v$v" >"$WORK/v$v.folded" 2>&1 || fail "v$v: folded failed"
done
cmp -s "$WORK/v7.folded" "$WORK/v8.folded" || fail "versions 7 and 8 give other folded stacks"
[ -s "$WORK/v8.folded" ] || fail "no folded stacks"
check "$WORK/v7.json" "$WORK/v8.json" <<'PY'
import sys
from churncheck import *
old, new = load(sys.argv[1]), load(sys.argv[2])
expect("format versions", (old["metadata"]["format_version"], new["metadata"]["format_version"]),
       (7, 8))
for r in (old, new):
    for k in ("format_version", "file_bytes", "ring_bytes", "trace"):
        r["metadata"].pop(k)
if old != new:
    keys = [k for k in old if old[k] != new.get(k)]
    fail("versions 7 and 8 of one trace give other reports: %s differ" % keys)
expect("segments used", new["metadata"]["segments_used"], 6)
expect("warnings", new.get("warnings", []), [])
print("versions 7 and 8: the same report")
PY
grep -v "^trace\|bytes\|format" "$WORK/v7.txt" >"$WORK/v7.cmp"
grep -v "^trace\|bytes\|format" "$WORK/v8.txt" >"$WORK/v8.cmp"
diff "$WORK/v7.cmp" "$WORK/v8.cmp" >"$WORK/txt.diff" ||
    fail "versions 7 and 8 give other text reports: $(head -5 "$WORK/txt.diff")"

analyze "$WORK/wrapped" "$WORK/wrapped.json" --all-epochs
"$ANALYZE" "$WORK/wrapped" 2>&1 | grep -q "3 segment(s) used, 2 overwritten by the ring," ||
    fail "wrapped: the header does not say 2 overwritten (0 and 1; 2 is in the file, unused): $("$ANALYZE" "$WORK/wrapped" 2>&1 | sed -n 2p)"
check "$WORK/wrapped.json" <<'PY'
import sys
from churncheck import *
d = load(sys.argv[1])
m = d["metadata"]
expect("wrapped: first and last segment", (m["first_seq"], m["last_seq"], m["segments_used"]),
       (3, 5, 3))
warned = [w for w in d.get("warnings", []) if "not used: delta segments" in w]
if len(warned) != 1 or "seq 2..2" not in warned[0] or "epochs 2..2" not in warned[0]:
    fail("wrapped: no warning for the delta segment 2 before key segment 3: %s"
         % d.get("warnings"))
t = d["totals"]
expect("wrapped: allocs and frees from segment 3 on", (t["allocs"], t["frees"]), (9, 6))
g = {s["stack_id"]: s for s in d["growth"]}
expect("wrapped: stack 5 live at the end", (g[5]["live_count"], g[5]["live_bytes"]), (8, 256))
print("wrapped: starts at key segment 3, segment 2 reported")
PY

analyze "$WORK/damaged" "$WORK/damaged.json" --all-epochs
check "$WORK/damaged.json" <<'PY'
import sys
from churncheck import *
d = load(sys.argv[1])
ws = d.get("warnings", [])
if not any("segment 1: malformed record" in w for w in ws):
    fail("damaged: segment 1's malformed record not reported: %s" % ws)
skip = [w for w in ws if "skipped after damaged segment 1" in w]
if len(skip) != 1 or not skip[0].startswith("1 delta segment(s) (seq 2..2, epochs 2..2)"):
    fail("damaged: the delta segment after it not reported as skipped: %s" % ws)
expect("damaged: epochs read", [e["epoch"] for e in d["epochs"]], [0, 1, 3, 4, 5])
g = {s["stack_id"]: s for s in d["growth"]}
if 6 not in g:
    fail("damaged: stack 6, defined again in key segment 3, is missing")
print("damaged: delta segment 2 skipped and reported, reading goes on at key segment 3")
PY

analyze "$WORK/gapped" "$WORK/gapped.json" --all-epochs
check "$WORK/gapped.json" <<'PY'
import sys
from churncheck import *
d = load(sys.argv[1])
m = d["metadata"]
expect("gapped: segments read", (m["first_seq"], m["last_seq"], m["segments_used"]), (0, 1, 2))
ws = [w for w in d.get("warnings", []) if "not used: delta segments after a gap" in w]
if len(ws) != 1 or not ws[0].startswith("2 newer segment(s) (seq 4..5, epochs 4..5)"):
    fail("gapped: the delta segments after the gap not reported: %s" % d.get("warnings"))
expect("gapped: epochs read", [e["epoch"] for e in d["epochs"]], [0, 1])
print("gapped: read up to the gap, delta segments 4 and 5 reported")
PY

if "$ANALYZE" --json "$WORK/nokey" >"$WORK/nokey.json" 2>"$WORK/nokey.err"; then
    fail "a trace with no key segment after its gap was analyzed"
fi
grep -q "no key segment" "$WORK/nokey.err" || fail "nokey: $(cat "$WORK/nokey.err")"
echo "PASS"
