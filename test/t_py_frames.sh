#!/bin/sh
# Python frames from CPython's own frame chain, with the line of each (shim/record/
# pyframes.c), without a perf map: Debian's python3.11 (no perf support), pyenv's 3.11.7,
# 3.12.1 and 3.13.0 (a missing one says NOT RUN) run test/programs/py_cache.py, a dict
# cache growing an entry per request, under the shim with PYTHONPERFSUPPORT unset.  The top
# function row of --script-functions is remember with the file:line tracemalloc names for
# the growth, an object a request; the callsite's stack has remember (file:line) outward of
# _PyEval_EvalFrameDefault and handle at the line of its call.  CHURN_RUNTIME_FRAMES=0 names
# none.  The trace names the Python frames by a CODE record of kind py (0x81) per code object
# and segment, before the segment's first STACK with a frame of it, and by no CODE record of
# a line (docs/format.md).  test/programs/py_threads.py (four threads, generators, an exception a turn) prints
# the same traced as not, and its stacks name worker and pieces.
. test/lib.sh
require_built
unset PYTHONPERFSUPPORT

ran=0
pythons_with_frames
for py in $pythons; do
    n=$(echo "$py" | tr '/' '_')
    "$py" test/programs/py_cache.py 400 tracemalloc >"$WORK/tm$n.out" 2>&1 ||
        fail "$py with tracemalloc: $(tail -n 1 "$WORK/tm$n.out")"
    for frames in 1 0; do
        CHURN_EPOCH_SIGNAL=USR2 CHURN_RUNTIME_FRAMES=$frames traced "$WORK/$n-$frames.zst" \
            "$WORK/$n-$frames.out" "$py" test/programs/py_cache.py 400
        grep -qx 400 "$WORK/$n-$frames.out" || fail "$py traced: $(cat "$WORK/$n-$frames.out")"
        analyze "$WORK/$n-$frames.zst" "$WORK/$n-$frames.json" --epochs 1:400
        analyze "$WORK/$n-$frames.zst" "$WORK/$n-$frames.scripts.json" --epochs 1:400 \
            --script-functions
    done
    check "$py" "$WORK/$n-1.json" "$WORK/$n-1.scripts.json" "$WORK/$n-0.json" \
        "$WORK/tm$n.out" "$ROOT/test/programs/py_cache.py" <<'PY'
import sys
from churncheck import *
py, report, scripts, plain = sys.argv[1], load(sys.argv[2]), load(sys.argv[3]), load(sys.argv[4])
tm, script = open(sys.argv[5]).read().split(), sys.argv[6]
where = tm[0]
expect("tracemalloc's file", where.rsplit(":", 1)[0], script)
f = field(scripts, "functions")[0]
expect("%s: the top function row" % py, (f["function"], f["module"]), ("remember", where))
if abs(f["count_per_epoch"] - 1) > 0.05:
    fail("%s: remember keeps %.3f objects a request, not one" % (py, f["count_per_epoch"]))
call = next(i + 1 for i, l in enumerate(open(script)) if l.strip() == "remember(request, request)")
frame = "remember (%s)" % where
mixed = [g["stack"] for g in field(report, "growth") if frame in g["stack"]]
if not mixed:
    fail("%s: no callsite's stack names %s" % (py, frame))
s = mixed[0]
at = s.index(frame)
if not s[at - 1].startswith("_PyEval_EvalFrameDefault"):
    fail("%s: %s is not just outward of the evaluation loop: %s" % (py, frame, s[:at + 2]))
expect("%s: the frame outward of remember" % py, s[at + 1], "handle (%s:%d)" % (script, call))
if any("remember" in x for g in field(plain, "growth") for x in g["stack"]):
    fail("%s: CHURN_RUNTIME_FRAMES=0: remember is named all the same" % py)
print("%s: %s, %.2f objects/epoch, tracemalloc's line; handle at %d outward" %
      (py, frame, f["count_per_epoch"], call))
PY
    check "$py" "$WORK/$n-1.zst" <<'PY'
import sys
from churncheck import *
py, named, lines, defined = sys.argv[1], {}, 0, 0
# a code object is named once from a key segment to the next (format 8), in the first
# segment of those whose stacks have a frame of it
delta = {h["seq"]: h["delta"] for h in segment_headers(sys.argv[2])}
key = None
for r in records(sys.argv[2]):
    if not delta[r["segment"]]:
        key = r["segment"]
    seg = named.setdefault(key, set())
    if r["tag"] == 0x80 and (r["start"] + 1) >> 56 == 0xfe:
        lines += 1
    elif r["tag"] == 0x81:
        if r["code_id"] in seg:
            fail("%s: code id %d named twice in the segments from key segment %d"
                 % (py, r["code_id"], key))
        seg.add(r["code_id"])
    elif r["tag"] == 0x03:
        ip = 0
        for d in r["ips"]:
            ip = (ip + d) & (1 << 64) - 1
            if ip >> 56 == 0xfe and ip & 1 and (ip & ~(0xfe << 56)) >> 24 not in seg:
                fail("%s: segment %d: stack %d has a frame of code id %d before its name"
                     % (py, r["segment"], r["id"], (ip & ~(0xfe << 56)) >> 24))
            defined += ip >> 56 == 0xfe
expect("%s: CODE records of a Python frame's line" % py, lines, 0)
if not defined:
    fail("%s: no stack has a Python frame" % py)
print("%s: %d code objects named after %d key segments for %d Python frames of stacks"
      % (py, sum(map(len, named.values())), len(named), defined))
PY
    expected=$("$py" test/programs/py_threads.py)
    traced "$WORK/$n-threads.zst" "$WORK/$n-threads.out" "$py" \
        test/programs/py_threads.py
    [ "$(cat "$WORK/$n-threads.out")" = "$expected" ] ||
        fail "$py py_threads.py printed $(cat "$WORK/$n-threads.out") traced, $expected not"
    analyze "$WORK/$n-threads.zst" "$WORK/$n-threads.json"
    for fn in worker pieces; do
        grep -q "\"$fn ($ROOT/test/programs/py_threads.py:[0-9]*)\"" "$WORK/$n-threads.json" ||
            fail "$py py_threads.py: no stack names $fn"
    done
    ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || fail "no CPython 3.11 to 3.13 on this machine: nothing tested"
echo "$ran interpreters: Python frames with their lines"
