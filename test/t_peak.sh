#!/bin/sh
# The peak heap: requested bytes live at the process's high-water mark in the trace's order.
# test/programs/peak_temp.c holds 1,000 blocks while rounds of ten larger ones come and go:
# the peak has all of one round live, in the "peak" phase's epoch, and the report's peak
# (bytes, count, epoch, per-callsite figures) matches the program and a recomputation from
# the trace's records (test/churncheck.py, heap_order); --folded=peak, pprof and the text
# and HTML reports carry it.  Across threads (test/programs/cross_thread.c) the peak is the
# one of the trace's order, which the recomputation follows too.  heaptrack's figure on the
# same program is in the log (it also counts the libstdc++ it loads itself).
# decoders: fast and slow
. test/lib.sh

build_c peak_temp test/programs/peak_temp.c
build_c cross_thread test/programs/cross_thread.c -pthread
traced "$WORK/trace.zst" "$WORK/out" "$WORK/peak_temp"
analyze "$WORK/trace.zst" "$WORK/report.json"
for form in text folded; do
    case $form in
    text) args= ;;
    folded) args=--folded=peak ;;
    esac
    "$ANALYZE" $args "$WORK/trace.zst" >"$WORK/report.$form" 2>"$WORK/report.$form.err" ||
        fail "churn-analyze $args failed: $(tail -n 1 "$WORK/report.$form.err")"
done
"$ANALYZE" --html -o "$WORK/report.html" "$WORK/trace.zst" 2>"$WORK/html.err" ||
    fail "churn-analyze --html failed: $(tail -n 1 "$WORK/html.err")"
traced "$WORK/threads.zst" "$WORK/threads.out" "$WORK/cross_thread"
analyze "$WORK/threads.zst" "$WORK/threads.json"
heaptrack_peak=none
if command -v heaptrack >/dev/null 2>&1; then
    rm -f "$WORK"/ht.*
    heaptrack -o "$WORK/ht" "$WORK/peak_temp" >"$WORK/ht.out" 2>&1 || fail "heaptrack failed"
    heaptrack_print "$(ls "$WORK"/ht.*zst)" >"$WORK/ht.txt" 2>&1 || fail "heaptrack_print failed"
    heaptrack_peak=$WORK/ht.txt
fi

check "$WORK" "$heaptrack_peak" <<'PY'
import os, sys
from churncheck import *
work, ht = sys.argv[1], sys.argv[2]
report, out = load(os.path.join(work, "report.json")), open(os.path.join(work, "out")).read()
ph = phases(os.path.join(work, "out"))
w = out.split("hold ")[1].split()
hold, hold_size, spike, spike_size = int(w[0]), int(w[1]), int(w[3]), int(w[4])
peak = field(report, "peak")
def at_peak(function):
    rows = [c for c in field(peak, "callsites") if any(function in f for f in c["stack"])]
    return (sum(c["live_count"] for c in rows), sum(c["live_bytes"] for c in rows))
expect("peak_hold live at the peak", at_peak("peak_hold"), (hold, hold * hold_size))
expect("peak_spike live at the peak (one whole round)", at_peak("peak_spike"),
       (spike, spike * spike_size))
expect("after_peak live at the peak", at_peak("after_peak"), (0, 0))
expect("peak epoch", peak["epoch"], ph["peak"])
if len(peak["callsites"]) < 20:
    expect("peak bytes against its callsites", peak["bytes"],
           sum(c["live_bytes"] for c in peak["callsites"]))
    expect("peak count against its callsites", peak["count"],
           sum(c["live_count"] for c in peak["callsites"]))
independent = heap_order(os.path.join(work, "trace.zst"))
expect("peak (bytes, count, epoch) against the trace's records",
       (peak["bytes"], peak["count"], peak["epoch"]),
       (independent["peak"], independent["peak_count"], independent["peak_epoch"]))
folded = {}
for line in open(os.path.join(work, "report.folded")):
    stack, value = line.rsplit(" ", 1)
    folded[stack] = folded.get(stack, 0) + int(value)
expect("--folded=peak total", sum(folded.values()), peak["bytes"])
expect("--folded=peak peak_hold", sum(v for s, v in folded.items() if "peak_hold" in s),
       hold * hold_size)
text = open(os.path.join(work, "report.text")).read()
if "Peak: " not in text or "Live at the peak, by callsite:" not in text:
    fail("the text report does not show the peak")
if "peak live (%d objects, epoch %d)" % (peak["count"], peak["epoch"]) not in \
        open(os.path.join(work, "report.html")).read():
    fail("the HTML report does not show the peak")
threads = load(os.path.join(work, "threads.json"))
mine = heap_order(os.path.join(work, "threads.zst"))
expect("peak across threads against the trace's records",
       (field(threads, "peak", "bytes"), threads["peak"]["count"], threads["peak"]["epoch"]),
       (mine["peak"], mine["peak_count"], mine["peak_epoch"]))
expect("temporary across threads against the trace's records",
       field(threads, "totals", "temporary"), mine["temporary"])
print("peak %d B in %d objects at epoch %d (peak_hold %d x %d, peak_spike %d x %d); "
      "threads: %d B, %d temporary"
      % (peak["bytes"], peak["count"], peak["epoch"], hold, hold_size, spike, spike_size,
         mine["peak"], mine["temporary"]))
if ht != "none":
    lines = [l for l in open(ht) if "peak heap memory consumption" in l or "peak memory consumed" in l]
    print("heaptrack_print on the same program: %s" % "; ".join(l.strip() for l in lines))
PY
