#!/bin/sh
# What happened to the objects (test/programs/retention.c, 300 epochs): each callsite gets
# its retention class with exact counts, in the JSON growth rows and the text report; the
# same program killed with SIGKILL after its last epoch (no exit record) makes the objects
# still live "live", neither leaked nor kept.  --freed names the window's frees.
. test/lib.sh

build_c retention test/programs/retention.c
traced "$WORK/ended.zst" "$WORK/ended.out" "$WORK/retention"
analyze "$WORK/ended.zst" "$WORK/ended.json"
"$ANALYZE" "$WORK/ended.zst" >"$WORK/ended.txt" 2>&1 || fail "churn-analyze text report failed"

"$ANALYZE" --json --freed 201:201 "$WORK/ended.zst" >"$WORK/freed.json" 2>&1 ||
    fail "churn-analyze --freed 201:201 failed: $(tail -n 1 "$WORK/freed.json")"
"$ANALYZE" --freed 201: "$WORK/ended.zst" >"$WORK/freed.txt" 2>&1 || fail "churn-analyze --freed 201: failed"
"$ANALYZE" --folded=retained "$WORK/ended.zst" >"$WORK/retained.folded" 2>&1 ||
    fail "churn-analyze --folded=retained failed: $(tail -n 1 "$WORK/retained.folded")"
"$ANALYZE" --freed 5:x "$WORK/ended.zst" >/dev/null 2>&1 && fail "--freed 5:x was accepted"

rm -f "$WORK/cut.zst"
status=0
env CHURN_FLUSH_MS=20 CHURN_OUT="$WORK/cut.zst" LD_PRELOAD="$SHIM" "$WORK/retention" cut >"$WORK/cut.out" 2>&1 || status=$?
[ "$status" -eq 137 ] || fail "the cut run ended with status $status, not SIGKILL's 137"
analyze "$WORK/cut.zst" "$WORK/cut.json"

check "$WORK/ended.json" "$WORK/cut.json" "$WORK/ended.txt" "$WORK/freed.json" "$WORK/freed.txt" \
    "$WORK/retained.folded" <<'PY'
import sys
from churncheck import *
ended, cut = load(sys.argv[1]), load(sys.argv[2])
text = open(sys.argv[3]).read()
freed, freed_text = load(sys.argv[4]), open(sys.argv[5]).read()

# The compiler may call a function from more than one place in main (a peeled loop turn):
# every callsite of it has the class, and their retained counts add up.
def sites(report, name):
    rows = [g for g in field(report, "growth") if any(name in f for f in g["stack"][:3])]
    if not rows:
        fail("no growth row for %s" % name)
    return rows

def expect_class(report, name, kind, retained, reclaimed=None):
    rows = sites(report, name)
    for s in rows:
        expect("%s retention" % name, field(s, "retention"), kind)
    expect("%s retained_count" % name, sum(field(s, "retained_count") for s in rows), retained)
    got = [(r["epoch"], r["count"]) for r in (field(s, "reclaimed") for s in rows) if r]
    expect("%s reclaimed" % name, got, [reclaimed] if reclaimed else [])
    return rows[0] if len(rows) == 1 else None

epochs = 300
expect_class(ended, "leak_one", "leaked", epochs)
k = expect_class(ended, "keep_one", "kept_until_exit", epochs)
if k is None:
    fail("keep_one has more than one callsite: the test expects one")
expect("keep_one retained_bytes", field(k, "retained_bytes"), 40 * epochs)
expect("keep_one live_count at the end", field(k, "live_count"), 0)
# loop turn e runs in epoch e + 1 (epoch 0 is the start-up before the first churn_epoch())
c = expect_class(ended, "collect_one", "reclaimed", 0, (201, 200))
# four objects in flight when the teardown frees them: retained, but not accumulated
expect_class(ended, "pipeline_one", "steady", 4)

# The growth ranking uses the retained growth (the teardown is out of the fit): keep_one
# grows one object an epoch although nothing of it is live at the end.
expect("keep_one count_per_epoch", round(field(k, "count_per_epoch"), 6), 1)

expect_class(cut, "leak_one", "live", epochs)
expect_class(cut, "keep_one", "live", epochs)

for name, kind in (("leak_one", "leaked"), ("keep_one", "kept_until_exit: 300 objects"),
                   ("collect_one", "reclaimed: 200 objects freed at once in epoch 201")):
    block = text[text.find("Top callsites"):]
    at = next((i for i, l in enumerate(block.splitlines()) if name in l), None)
    lines = block.splitlines()
    # the class line comes right under the row's header, above its frames
    row = max(i for i in range(at) if lines[i].startswith("  #"))
    if not lines[row + 1].strip().startswith(kind):
        fail("text report: %s's class line is %r, not %r" % (name, lines[row + 1], kind))
# --freed 201:201, the collection's epoch: collect_one's 200 objects, allocated in epochs
# 1..200, then the one pipeline object freed that epoch; nothing else.
expect("freed window", (freed["freed"]["first"], freed["freed"]["last"]), (201, 201))
expect("no freed section without the option", ended["freed"], None)
rows = field(freed["freed"], "callsites")
top = rows[0]
if not any("collect_one" in f for f in top["stack"][:3]):
    fail("top freed callsite is not collect_one: %s" % top["stack"][:3])
expect("collect_one freed", (top["count"], top["bytes"], top["allocated_from"], top["allocated_to"]),
       (200, 56 * 200, 1, 200))
expect("callsites freeing in epoch 201", [r["count"] for r in rows], [200, 1])
expect("of them allocated before epoch 201", [r["older_count"] for r in rows], [200, 1])
expect("freed by function, in all", sum(f["count"] for f in freed["freed"]["functions"]), 201)
if "Freed in epochs 201.., by function:" not in freed_text:
    fail("the text report has no section for --freed 201:")
# The flame graphs' "retained" metric: what was live before the teardown, keep_one's 300
# objects included although the teardown freed them.
folded = {}
for line in open(sys.argv[6]):
    stack, value = line.rsplit(" ", 1)
    folded[stack] = folded.get(stack, 0) + int(value)
keep = sum(v for k, v in folded.items() if "keep_one" in k)
expect("--folded=retained at keep_one", keep, 40 * epochs)
expect("--folded=retained in all", sum(folded.values()),
       sum(g["retained_bytes"] for g in ended["growth"]))
print("leaked, kept_until_exit (300), reclaimed (200 at epoch 201), steady; cut: live")
PY
