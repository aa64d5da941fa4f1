#!/bin/sh
# A process tree's index whose lines name one trace again and again (20,000 start lines: the
# same line, other pids, other spellings of the path): --tree reads each trace once, lists it
# once, and says how many lines repeated a trace listed before; figures are the trace's own,
# not counted again per line.  Under a limit of CPU time that reading the trace per line
# passes many times over.
LIB_ANALYZER_ONLY=1
. test/lib.sh
T=$WORK

mkdir "$T/dir"
python3 - "$T" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
T = sys.argv[1]
recs = mktrace.prelude(0, 0) + [["stack", 1, [0x1000]], ["thread", 1], ["epoch", 0]]
recs += [["alloc", 0, 0x10000000 + 64 * i, 32, 0, 1] for i in range(100000)]
recs.append(["exit", 1, 0])
trace = os.path.join(T, "dir", "one.zst")
open(trace, "wb").write(mktrace.build({"segments": [{"seq": 0, "records": recs}]}))
other = os.path.join(T, "dir", "two.zst")
open(other, "wb").write(mktrace.build({"segments": [{"seq": 0, "records": recs[:-1]}]}))
spellings = [trace, os.path.join(T, "dir", ".", "one.zst"), T + "//dir/one.zst"]
lines = ["start\t100\t1\t0\t%s\t/bin/true\ttrue\n" % trace]
for i in range(1, 20000):
    pid = 100 if i % 2 else 100 + i   # the first line again, or another pid
    lines.append("start\t%d\t1\t0\t%s\t/bin/true\ttrue\n" % (pid, spellings[i % 3]))
    if i == 10000:                    # a second trace among them, listed once
        lines.append("start\t99\t1\t0\t%s\t/bin/true\ttrue\n" % other)
lines.append("end\t100\t0\t1\t0\ttrue\n")
open(os.path.join(T, "one.index"), "w").write("".join(lines))
PY

# tree NAME OPTION...: --tree over the index, at most 60 s of CPU (one reading of the trace
# takes about 0.05 s; one a line, 1,000 s)
tree() {
    name=$1
    shift
    status=0
    (ulimit -t 60 && exec "$ANALYZE" --tree "$@" "$T/one.index") >"$T/$name.out" \
        2>"$T/$name.err" || status=$?
    [ "$status" != 152 ] && [ "$status" != 137 ] || fail "$name: not done in 60 s of CPU time"
    [ "$status" = 0 ] || fail "$name: exit status $status: $(tail -n 1 "$T/$name.err")"
}
tree text
tree json --json

grep -q "^Process tree: 2 process image(s), listed in $T/one.index$" "$T/text.out" ||
    fail "text: $(head -n 1 "$T/text.out")"
grep -q "^  The index lists 19999 more line(s) naming a trace listed above: each trace is read and shown once\.$" \
    "$T/text.out" || { head -n 20 "$T/text.out"; fail "text: no line on the repeated lines"; }
[ "$(grep -c '^==== pid ' "$T/text.out")" = 2 ] || fail "text: not one section per trace"

check "$T" <<'PY'
import json, sys
T = sys.argv[1]
d = json.load(open(T + "/json.out"))
procs = [(p["pid"], p["trace"]) for p in d["processes"]]
if procs != [(100, T + "/dir/one.zst"), (99, T + "/dir/two.zst")]:
    sys.exit("FAIL: processes %s, want pid 100 for one.zst and 99 for two.zst" % procs[:5])
s = d["summary"]
if s["repeated_lines"] != 19999:
    sys.exit("FAIL: repeated_lines %s, want 19999" % s.get("repeated_lines"))
if s["totals"]["images"] != 2 or s["totals"]["allocs"] != 200000:
    sys.exit("FAIL: totals %s, want 2 images and 200000 allocations" % s["totals"])
if s["images"][0]["end"] != "exit 0":
    sys.exit("FAIL: pid 100 ends '%s', want its end line's 'exit 0'" % s["images"][0]["end"])
PY
echo "PASS: t_tree_repeats"
