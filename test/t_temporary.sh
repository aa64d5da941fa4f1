#!/bin/sh
# Temporary allocations (heaptrack's term): an allocation whose free is the process's next
# heap event in the trace's order.  test/programs/peak_temp.c makes a known number at known
# callsites (allocated and freed at once; a realloc's old block and the grown one), and
# patterns that are not (two allocated before either is freed; ten of one callsite freed in
# allocation order).  The report's totals.temporary and per-callsite counts match the program
# and a count recomputed from the trace's records (test/churncheck.py, heap_order); the text
# report ranks tmp_alloc first; without events (CHURN_EVENTS=0) the figure is null.
# heaptrack on the same program is in the log: its rule compares the free with the last
# allocation's size and stack, not the object, so it also counts the first of each round of
# ten peak_spike blocks (docs/analyzer.md).
# decoders: fast and slow
. test/lib.sh

build_c peak_temp test/programs/peak_temp.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/peak_temp"
analyze "$WORK/trace.zst" "$WORK/report.json"
"$ANALYZE" "$WORK/trace.zst" >"$WORK/report.txt" 2>"$WORK/report.txt.err" ||
    fail "churn-analyze (text) failed: $(tail -n 1 "$WORK/report.txt.err")"
CHURN_EVENTS=0 traced "$WORK/sums.zst" "$WORK/sums.out" "$WORK/peak_temp"
analyze "$WORK/sums.zst" "$WORK/sums.json"
"$ANALYZE" "$WORK/sums.zst" >"$WORK/sums.txt" 2>&1 || fail "churn-analyze (text, sums) failed"
heaptrack_temps=none
if command -v heaptrack >/dev/null 2>&1; then
    rm -f "$WORK"/ht.*
    heaptrack -o "$WORK/ht" "$WORK/peak_temp" >"$WORK/ht.out" 2>&1 || fail "heaptrack failed"
    heaptrack_print -T 1 "$(ls "$WORK"/ht.*zst)" >"$WORK/ht.txt" 2>&1 || fail "heaptrack_print failed"
    heaptrack_temps=$WORK/ht.txt
fi

check "$WORK/report.json" "$WORK/out" "$WORK/trace.zst" "$WORK/report.txt" "$WORK/sums.json" \
      "$WORK/sums.txt" "$heaptrack_temps" <<'PY'
import re, sys
from churncheck import *
report, out, trace, text = load(sys.argv[1]), open(sys.argv[2]).read(), sys.argv[3], open(sys.argv[4]).read()
sums, sums_text, ht = load(sys.argv[5]), open(sys.argv[6]).read(), sys.argv[7]
w = out.split("temps ")[1].split()
temps, reallocs, spikes = int(w[0]), int(w[4]), int(w[w.index("rounds") + 1])
def site(function):
    entries = growth_with(report, function)
    if not entries:
        fail("no growth entry for " + function)
    return (sum(g["allocs"] for g in entries), sum(g["temporary"] for g in entries))
expect("tmp_alloc (allocs, temporary)", site("tmp_alloc"), (temps, temps))
expect("pair_alloc temporary (two allocated before either is freed)", site("pair_alloc")[1], 0)
expect("grow_start temporary (freed by the realloc next)", site("grow_start"), (reallocs, reallocs))
expect("grow_more temporary", site("grow_more"), (reallocs, reallocs))
expect("peak_spike temporary (freed in allocation order)", site("peak_spike")[1], 0)
expect("peak_hold temporary", site("peak_hold")[1], 0)
independent = heap_order(trace)
expect("totals.temporary against the trace's records", field(report, "totals", "temporary"),
       independent["temporary"])
ranking = text.split("Top callsites by temporary allocations:")
if len(ranking) < 2:
    fail("the text report has no ranking of temporary allocations")
first = ranking[1].split("#2")[0]
if "%d temporary of %d allocs" % (temps, temps) not in first or "tmp_alloc" not in first:
    fail("the text report's first temporary callsite is not tmp_alloc with %d: %r" % (temps, first))
expect("totals.temporary without events", field(sums, "totals", "temporary"), None)
expect("peak without events", field(sums, "peak"), None)
if "not known (CHURN_EVENTS=0" not in sums_text:
    fail("the text report of a trace without events does not say temporaries are not known")
print("temporary: %d in all, tmp_alloc %d, realloc pairs %d + %d, none elsewhere"
      % (independent["temporary"], temps, reallocs, reallocs))
if ht != "none":
    got = {}
    lines = open(ht).read().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"^(\d+) temporary allocations of (\d+) allocations in total .* from$", line)
        if m and i + 1 < len(lines):
            got[lines[i + 1].strip()] = int(m.group(1))
    print("heaptrack_print on the same program: %s" % sorted(got.items()))
    expect("heaptrack's peak_spike temporaries (its rule: same size and stack as the last "
           "allocation, one per round)", got.get("peak_spike", 0), spikes)
    expect("heaptrack's tmp_alloc temporaries", got.get("tmp_alloc", 0), temps)
PY
