#!/bin/sh
# Callsites merged by allocating function (test/programs/functions.c): grow_slots, reached
# from four callers each active for a quarter of the run, is one row of four stacks whose
# fit is that of the sum (exactly one 64-byte object per epoch, r2 1) while no callsite alone
# grows linearly; strdup's leak is the row of copy_name, the program's function that called
# the C library; the temporary's row has allocations and no growth.  Text, JSON and the page agree.
# A trace of one epoch (/bin/true) makes the text and the page say how to mark epochs.
. test/lib.sh

build_c functions test/programs/functions.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/functions"
analyze "$WORK/trace.zst" "$WORK/report.json"
"$ANALYZE" "$WORK/trace.zst" >"$WORK/report.txt" 2>"$WORK/report.txt.err" ||
    fail "churn-analyze text report failed: $(tail -n 1 "$WORK/report.txt.err")"
"$ANALYZE" --html "$WORK/trace.zst" -o "$WORK/report.html" 2>"$WORK/report.html.err" ||
    fail "churn-analyze --html failed: $(tail -n 1 "$WORK/report.html.err")"

check "$WORK/report.json" "$WORK/report.txt" "$WORK/report.html" <<'PY'
import re, sys
from churncheck import *
report = load(sys.argv[1])
text = open(sys.argv[2]).read()
html = open(sys.argv[3]).read()
epochs = 400
functions = field(report, "functions")
by_name = {f["function"]: f for f in functions}
for name in ("grow_slots", "copy_name", "scratch"):
    if name not in by_name:
        fail("no functions row for %s: rows %s" % (name, [f["function"] for f in functions]))
if functions[0]["function"] != "grow_slots":
    fail("top function is %s, not grow_slots" % functions[0]["function"])

g = by_name["grow_slots"]
expect("grow_slots stacks", field(g, "stacks"), 4)
expect("grow_slots allocs", field(g, "allocs"), epochs)
expect("grow_slots frees", field(g, "frees"), 0)
expect("grow_slots live_count", field(g, "live_count"), epochs)
expect("grow_slots live_bytes", field(g, "live_bytes"), 64 * epochs)
expect("grow_slots count_per_epoch", round(field(g, "count_per_epoch"), 6), 1)
expect("grow_slots bytes_per_epoch", round(field(g, "bytes_per_epoch"), 4), 64)
if not field(g, "r2") > 0.9999:
    fail("grow_slots r2 %r: the function's fit is not that of the sum of its stacks" % g["r2"])

# The per-stack rows it merges: four, each a quarter, none linear on its own.
sites = [s for s in field(report, "growth") if s["stack"] and s["stack"][0].startswith("grow_slots")]
expect("grow_slots callsites", len(sites), 4)
expect("sum of the callsites' allocs", sum(s["allocs"] for s in sites), g["allocs"])
expect("sum of the callsites' live bytes", sum(s["live_bytes"] for s in sites), g["live_bytes"])
slope = sum(s["bytes_per_epoch"] for s in sites)
if abs(slope - g["bytes_per_epoch"]) > 1e-6 * 64:
    fail("sum of the callsites' slopes %r != the function's %r" % (slope, g["bytes_per_epoch"]))
worst = max(s["r2"] for s in sites)
if not worst < 0.95:
    fail("a single callsite already fits a line (r2 %r): the test shows nothing" % worst)
top_share = max(s["bytes_per_epoch"] for s in sites) / g["bytes_per_epoch"]
if not top_share < 0.5:
    fail("one callsite carries %.0f %% of the growth: the test shows nothing" % (100 * top_share))

c = by_name["copy_name"]
expect("copy_name allocs (strdup in the C library)", field(c, "allocs"), epochs // 2)
expect("copy_name live_count", field(c, "live_count"), epochs // 2)
if any("strdup" in f["function"] for f in functions):
    fail("a functions row names the C library's strdup: %s" % [f["function"] for f in functions])

s = by_name["scratch"]
expect("scratch allocs", field(s, "allocs"), epochs)
expect("scratch frees", field(s, "frees"), epochs)
expect("scratch live_count", field(s, "live_count"), 0)
# scratch frees each block right after allocating it: all its allocations are temporary.
expect("scratch temporary", field(s, "temporary"), epochs)
expect("grow_slots temporary", field(g, "temporary"), 0)

first = text.find("Top functions by retained growth")
if first < 0:
    fail("the text report has no functions section")
if first > text.find("Top callsites by retained growth"):
    fail("the text report does not lead with the functions")
line = next((l for l in text[first:].splitlines() if "grow_slots" in l), None)
if not line or "4 stacks" not in line or "live %d objects" % epochs not in line:
    fail("text row of grow_slots: %r" % line)
first = html.find("Top functions by retained growth")
if first < 0 or first > html.find("Top callsites by retained growth"):
    fail("the page does not show the functions before the callsites")
row = re.search(r"<tr><td>1</td>(.*?)</tr>", html[first:])
if not row or "grow_slots (functions)" not in row.group(1) or "<td>4</td>" not in row.group(1):
    fail("the page's first function row: %r" % (row.group(1) if row else None))
print("grow_slots: 4 stacks, %d objects, r2 %.6f (callsites' best r2 %.3f, top share %.2f)"
      % (g["live_count"], g["r2"], worst, top_share))
PY

# A program that marks no epochs: the text report and the page say how to get them.
traced "$WORK/noepochs.zst" "$WORK/noepochs.out" /bin/true
"$ANALYZE" "$WORK/noepochs.zst" >"$WORK/noepochs.txt" 2>&1 || fail "churn-analyze on /bin/true's trace failed"
"$ANALYZE" --html "$WORK/noepochs.zst" -o "$WORK/noepochs.html" 2>&1 || fail "--html on /bin/true's trace failed"
for f in "$WORK/noepochs.txt" "$WORK/noepochs.html"; do
    grep -q "One epoch only" "$f" && grep -q "CHURN_EPOCH_AT=" "$f" && grep -q "CHURN_EPOCH_MS=" "$f" &&
        grep -q "CHURN_EPOCH_SIGNAL=" "$f" || fail "$f does not say how to mark epochs"
done
grep -q "One epoch only" "$WORK/report.txt" && fail "the hint about epochs appears in a trace with 400 epochs"
echo "no-epoch hint shown on a trace of /bin/true and not on one with epochs"
