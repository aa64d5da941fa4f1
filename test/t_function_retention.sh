#!/bin/sh
# A function's retention comes from its stacks' classes (test/programs/function_retention.c):
# fill_slot holds a steady base of 100 objects from one stack and keeps 10 objects an epoch
# until the exit from another; the row is kept_until_exit (its retained 200 objects are both
# stacks'), and the split names both classes with their counts, in the JSON, the text and the
# page.
. test/lib.sh

build_c function_retention test/programs/function_retention.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/function_retention"
analyze "$WORK/trace.zst" "$WORK/report.json"
"$ANALYZE" "$WORK/trace.zst" >"$WORK/report.txt" 2>&1 || fail "churn-analyze text report failed"
"$ANALYZE" --html "$WORK/trace.zst" -o "$WORK/report.html" 2>"$WORK/html.err" ||
    fail "churn-analyze --html failed: $(tail -n 1 "$WORK/html.err")"

check "$WORK/report.json" "$WORK/report.txt" "$WORK/report.html" <<'PY'
import sys
from churncheck import *
report, text, html = load(sys.argv[1]), open(sys.argv[2]).read(), open(sys.argv[3]).read()

# the callsites on their own (the compiler may split a caller's loop into more than one)
def sites(name):
    rows = [g for g in field(report, "growth") if any(name in f for f in g["stack"][1:3])]
    if not rows or not all(g["stack"][0].startswith("fill_slot") for g in rows):
        fail("no fill_slot growth row under %s" % name)
    return rows
for name, kind, count, size in (("base_fill", "steady", 100, 32), ("keep_more", "kept_until_exit", 100, 64)):
    rows = sites(name)
    expect("%s retention" % name, sorted({field(g, "retention") for g in rows}), [kind])
    expect("%s retained" % name, (sum(g["retained_count"] for g in rows),
                                  sum(g["retained_bytes"] for g in rows)), (count, count * size))

fn = [f for f in field(report, "functions") if f["function"] == "fill_slot"]
if len(fn) != 1:
    fail("fill_slot function rows: %d" % len(fn))
fn = fn[0]
expect("fill_slot retention", field(fn, "retention"), "kept_until_exit")
# what was live before the teardown: the summed series', both stacks'
expect("fill_slot retained", (field(fn, "retained_count"), field(fn, "retained_bytes")), (200, 9600))
split = [(c["retention"], c["retained_count"], c["retained_bytes"])
         for c in field(fn, "retention_classes")]
expect("fill_slot classes", split, [("kept_until_exit", 100, 6400), ("steady", 100, 3200)])
expect("fill_slot stacks by class", sum(c["stacks"] for c in fn["retention_classes"]), fn["stacks"])

line = next((l for l in text.splitlines() if l.startswith("  #") and "fill_slot (" in l), None)
if line is None:
    fail("no fill_slot row in the text report's functions")
want = "kept_until_exit (kept_until_exit 100 objects (6.2KiB) in "
if want not in line or "; steady 100 objects (3.1KiB) in " not in line:
    fail("text row %r does not give the classes" % line)
if "<td>kept_until_exit<br>200 (9.4 KiB) before the teardown<br>kept_until_exit 100 (6.2 KiB) in" not in html:
    fail("the page's fill_slot row does not give the class and the split")
if "<br>steady 100 (3.1 KiB) in " not in html:
    fail("the page's fill_slot row does not give the steady class")
print("fill_slot: kept_until_exit 100 (6400 B), steady 100 (3200 B)")
PY
