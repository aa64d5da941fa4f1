#!/bin/sh
# JavaScript and Python frames beside the native ones, from the runtimes' perf maps:
#   node (the pinned build, test/node/install.sh) with --perf-basic-prof
#   --interpreted-frames-native-stack serves 400 requests of test/node/server.js in mode
#   closure, whose keepInClosure keeps a closure over a 16 KiB Buffer per request (an epoch
#   per request).  The map file is removed before the analysis: the stack of the Buffers'
#   callsite still names keepInClosure with its file:line, outward of node::Buffer's frames,
#   and --script-functions makes it the top function row, about 16 KiB per epoch.  Under
#   `churn run` node gets its map without a flag, and churn removes the map and the V8 log
#   --perf-basic-prof has node write in its working directory.
#   CPython 3.12 and 3.13 (pyenv's; a machine without them says NOT RUN for each) run
#   test/programs/py_cache.py, a dict cache growing an entry per request, under `churn run`
#   (which sets PYTHONPERFSUPPORT=1 and removes the map it had written): the walk gets
#   through CPython's perf trampolines, the callsite's stack names remember (py_cache.py:
#   LINE) outward of _PyEval_EvalFrameDefault, LINE the one tracemalloc names for the
#   growth (the frame chain's, t_py_frames.sh), the trampoline's own frame left out, and
#   --script-functions makes remember the top row, an object a request.  With
#   --runtime-frames=0 nothing names it.
. test/lib.sh

# ---- node ----
NODE=$(test/node/install.sh 2>"$WORK/install.err") || fail "$(tail -n 1 "$WORK/install.err")"
python3 test/node/drive.py --node "$NODE" --mode closure --requests 400 --log "$WORK/node.log" \
    --env "LD_PRELOAD=$SHIM" --env "CHURN_OUT=$WORK/node.zst" \
    --env "CHURN_EPOCH_AT=llhttp__on_message_begin" \
    --env "NODE_OPTIONS=--perf-basic-prof --interpreted-frames-native-stack" --cwd "$WORK" \
    >"$WORK/node.json" 2>"$WORK/node.err" || fail "node: $(tail -n 1 "$WORK/node.err")"
pid=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["pid"])' <"$WORK/node.json")
[ -s "/tmp/perf-$pid.map" ] || fail "node wrote no perf map /tmp/perf-$pid.map"
rm -f "/tmp/perf-$pid.map" "$WORK"/isolate-*-$pid-v8.log
analyze "$WORK/node.zst" "$WORK/node.report.json" --epochs 1:400
analyze "$WORK/node.zst" "$WORK/node.scripts.json" --epochs 1:400 --script-functions
check "$WORK/node.report.json" "$WORK/node.scripts.json" "$ROOT/test/node/server.js" <<'PY'
import re, sys
from churncheck import *
report, scripts, server = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3]
line = next(i + 1 for i, l in enumerate(open(server)) if l.startswith("function keepInClosure"))
handler = "keepInClosure (%s:%d)" % (server, line)
top = field(report, "growth")[0]
stack = top["stack"]
if handler not in stack:
    fail("the top callsite's stack does not name %s: %s" % (handler, stack[:16]))
at = stack.index(handler)
buffer_frames = [i for i, f in enumerate(stack) if f.startswith("node::Buffer::")]
if not buffer_frames or max(buffer_frames) > at:
    fail("node::Buffer's frames are not inward of the handler: %s" % stack[:at + 1])
f = field(scripts, "functions")[0]
expect("--script-functions: the top row", (f["function"], f["module"]),
       ("keepInClosure", "%s:%d" % (server, line)))
if not 15000 < f["bytes_per_epoch"] < 18000:
    fail("keepInClosure grows %.0f B/epoch, not about 16 KiB" % f["bytes_per_epoch"])
print("node: %s above %s, %.0f B/epoch for its row" % (handler, stack[max(buffer_frames)],
                                                        f["bytes_per_epoch"]))
PY

# churn run switches node's map on, and removes the map and the V8 log node wrote for it
cat >"$WORK/keep.js" <<'JS'
function keepMany(n) {
  const kept = [];
  for (let i = 0; i < n; i++) kept.push(Buffer.alloc(4096));
  return kept.length;
}
console.log(keepMany(2000));
JS
status=0
(cd "$WORK" && "$ROOT/build/churn" run -o "$WORK/run.zst" "$NODE" keep.js >run.out 2>run.err) ||
    status=$?
[ "$status" -eq 0 ] || fail "churn run node: status $status: $(tail -n 1 "$WORK/run.err")"
grep -qx 2000 "$WORK/run.out" || fail "node under churn run printed $(cat "$WORK/run.out")"
! ls "$WORK"/isolate-*-v8.log >/dev/null 2>&1 || fail "churn run left node's V8 log in $WORK"
analyze "$WORK/run.zst" "$WORK/run.json"
pid=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["pid"])' <"$WORK/run.json")
[ ! -e "/tmp/perf-$pid.map" ] || fail "churn run left /tmp/perf-$pid.map behind"
grep -q "keepMany ($WORK/keep.js:1)" "$WORK/run.json" ||
    fail "churn run node: no frame names keepMany ($WORK/keep.js:1)"
echo "churn run node: keepMany named, its map and V8 log removed"

# ---- CPython 3.12 and 3.13 ----
for v in 3.12.1 3.13.0; do
    py=$PYENV/$v/bin/python${v%.*}
    if [ ! -x "$py" ]; then
        echo "NOT RUN: CPython $v: no $py on this machine (pyenv's)"
        continue
    fi
    "$py" test/programs/py_cache.py 400 tracemalloc >"$WORK/tm$v.out" 2>&1 ||
        fail "$py with tracemalloc: $(tail -n 1 "$WORK/tm$v.out")"
    for frames in 1 0; do
        rm -f "$WORK/py$v-$frames".*
        status=0
        build/churn run -o "$WORK/py$v-$frames.zst" --epoch-signal USR2 \
            --runtime-frames=$frames "$py" test/programs/py_cache.py 400 \
            >"$WORK/py$v-$frames.out" 2>"$WORK/py$v-$frames.err" || status=$?
        [ "$status" -eq 0 ] || fail "churn run $py: status $status: $(tail -n 1 "$WORK/py$v-$frames.err")"
        grep -qx 400 "$WORK/py$v-$frames.out" || fail "$py under churn run: $(cat "$WORK/py$v-$frames.out")"
        analyze "$WORK/py$v-$frames.zst" "$WORK/py$v-$frames.json" --epochs 1:400 \
            --script-functions
    done
    pid=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["pid"])' \
        <"$WORK/py$v-1.json")
    [ ! -e "/tmp/perf-$pid.map" ] || fail "churn run left /tmp/perf-$pid.map behind"
    check "$WORK/py$v-1.json" "$WORK/py$v-0.json" "$WORK/tm$v.out" "$ROOT/test/programs/py_cache.py" <<'PY'
import sys
from churncheck import *
report, plain, tm, script = load(sys.argv[1]), load(sys.argv[2]), open(sys.argv[3]).read().split(), sys.argv[4]
where, first, last = tm[0], int(tm[1]), int(tm[2])
expect("tracemalloc's line, in this file", where.rsplit(":", 1)[0], script)
line = int(where.rsplit(":", 1)[1])
if not first <= line <= last:
    fail("tracemalloc names line %d, outside remember (%d-%d)" % (line, first, last))
f = field(report, "functions")[0]
expect("the top function row", (f["function"], f["module"]), ("remember", where))
if abs(f["count_per_epoch"] - 1) > 0.05:
    fail("remember keeps %.3f objects a request, not one" % f["count_per_epoch"])
mixed = [g["stack"] for g in field(report, "growth")
         if "remember (%s)" % where in g["stack"]]
if not mixed:
    fail("no callsite's stack names remember (%s)" % where)
s = mixed[0]
at = s.index("remember (%s)" % where)
if not any(x.startswith("_PyEval_EvalFrameDefault") for x in s[:at]):
    fail("no interpreter frame inward of remember: %s" % s[:at + 1])
if "remember (%s)" % script in s:
    fail("the perf trampoline's frame is named beside the frame chain's: %s" % s[:at + 2])
if any("remember" in x for g in field(plain, "growth") for x in g["stack"]):
    fail("--runtime-frames=0: remember is named all the same")
print("%s: remember (%s) %.2f objects/epoch, tracemalloc's %s inside it (%d-%d); nothing "
      "named with --runtime-frames=0" % (sys.argv[1], script, f["count_per_epoch"], where,
                                        first, last))
PY
done
