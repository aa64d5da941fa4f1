#!/bin/sh
# --folded=METRIC on the demo workload (request_loop, 200 requests) and on 50,000 distinct
# stacks: every line parses as "frame;...;frame VALUE" (root first), and the values of each
# metric sum to the figure the JSON report gives for the same window.  A differential
# (--base) prints "BASE NEW" per line, summing to each window's live bytes.
. test/lib.sh

build_c request_loop test/programs/request_loop.c
build_c many_stacks test/programs/many_stacks.c
traced "$WORK/demo.zst" "$WORK/demo.out" "$WORK/request_loop" 200
traced "$WORK/many.zst" "$WORK/many.out" "$WORK/many_stacks" 50000
analyze "$WORK/demo.zst" "$WORK/demo.json"
analyze "$WORK/many.zst" "$WORK/many.json"
"$ANALYZE" --json --epochs 50:149 "$WORK/demo.zst" >"$WORK/window.json" ||
    fail "churn-analyze --json --epochs 50:149 failed"

folded() {
    out=$1
    shift
    status=0
    "$ANALYZE" "$@" >"$out" 2>"$out.err" || status=$?
    [ "$status" -eq 0 ] || fail "churn-analyze $* exited with $status: $(tail -n 1 "$out.err")"
}
for m in alloc_bytes allocs live_bytes live_count growth leaked pinned; do
    folded "$WORK/demo.$m" --folded=$m "$WORK/demo.zst"
done
folded "$WORK/demo.default" --folded "$WORK/demo.zst"
folded "$WORK/window.alloc_bytes" --folded=alloc_bytes --epochs 50:149 "$WORK/demo.zst"
folded "$WORK/diff" --folded=live_bytes --base 0:49 --epochs 150:199 "$WORK/demo.zst"
folded "$WORK/many.allocs" --folded=allocs "$WORK/many.zst"

status=0
"$ANALYZE" --folded=nonsense "$WORK/demo.zst" >/dev/null 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "--folded=nonsense exited with $status, expected 2 (usage error)"
status=0
"$ANALYZE" --json --base 0:1 "$WORK/demo.zst" >/dev/null 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "--json --base exited with $status, expected 2 (usage error)"

check "$WORK" <<'PY'
import json, os, re, sys
from churncheck import *
work = sys.argv[1]

def parse(name, columns=1):
    rows = []
    with open(os.path.join(work, name)) as f:
        for n, line in enumerate(f, 1):
            # Frames may hold spaces ("operator new(unsigned long)"): values are the last words.
            parts = line.rstrip("\n").rsplit(" ", columns)
            if len(parts) != columns + 1 or not all(re.fullmatch(r"\d+", v) for v in parts[1:]):
                fail("%s line %d is not a folded stack with %d value(s): %r" % (name, n, columns, line))
            frames = parts[0].split(";")
            if not all(frames):
                fail("%s line %d has an empty frame: %r" % (name, n, line))
            rows.append((frames, [int(v) for v in parts[1:]]))
    if not rows:
        fail("%s is empty" % name)
    return rows

def total(rows, col=0):
    return sum(v[col] for _, v in rows)

report = load(os.path.join(work, "demo.json"))
window = load(os.path.join(work, "window.json"))
t, last = field(report, "totals"), field(report, "epochs")[-1]
expect("alloc_bytes sum", total(parse("demo.alloc_bytes")), t["alloc_bytes"])
expect("allocs sum", total(parse("demo.allocs")), t["allocs"])
expect("live_bytes sum", total(parse("demo.live_bytes")), last["live_bytes"])
expect("live_count sum", total(parse("demo.live_count")), last["live_count"])
expect("leaked sum", total(parse("demo.leaked")), field(report, "leaked_at_exit")["bytes"])
pinned = [c for c in field(report, "fragmentation_callsites") if c["pinned_bytes"] > 0]
if not pinned:
    fail("the demo's survivors pin no span bytes")
expect("pinned sum", total(parse("demo.pinned")), sum(round(c["pinned_bytes"]) for c in pinned))
expect("default metric (live_bytes)", parse("demo.default"), parse("demo.live_bytes"))
expect("windowed alloc_bytes sum", total(parse("window.alloc_bytes")),
       field(window, "totals")["alloc_bytes"])

# Growth: bytes per epoch times the epochs of the steady window the slopes are fitted over
# (the request epochs after start-up; the exit tail is not one).
growth = parse("demo.growth")
steady = field(report, "steady_window")
epochs = steady["last"] - steady["first"] + 1
if not 150 <= epochs <= 200:
    fail("the demo's steady window %r is not most of its 200 request epochs" % steady)
want = sum(max(0, round(g["bytes_per_epoch"] * epochs)) for g in field(report, "growth"))
expect("growth sum", total(growth), want)
leak = [v[0] for frames, v in growth if frames[-1] == "remember_session"]
expect("remember_session growth", leak, [48 * epochs])
for frames, _ in growth:
    if frames[0] != "_start" or "main" not in frames:
        fail("growth stack is not root first: %s" % ";".join(frames))

# Differential: live bytes at the end of 0..49 (base) and of 150..199.
diff = parse("diff", 2)
rows = {r["epoch"]: r for r in field(report, "epochs")}
expect("diff base sum", total(diff, 0), rows[49]["live_bytes"])
expect("diff new sum", total(diff, 1), rows[199]["live_bytes"])
session = [v[1] - v[0] for frames, v in diff if frames[-1] == "remember_session"]
expect("remember_session growth from base to new", session, [48 * 150])

many = parse("many.allocs")
expect("many_stacks allocs sum", total(many), field(load(os.path.join(work, "many.json")), "totals")["allocs"])
deep = [frames for frames, _ in many if len(frames) >= 5 and re.fullmatch(r"f\d+", frames[-1])]
if len(deep) < 50000:
    fail("only %d folded lines end in the 50,000 distinct f* stacks" % len(deep))
print("folded: %d demo alloc lines, %d many_stacks lines, leak growth %d" %
      (len(parse("demo.alloc_bytes")), len(many), leak[0]))
PY
