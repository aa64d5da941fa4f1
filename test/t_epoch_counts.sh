#!/bin/sh
# Exact per-epoch figures for a known pattern: step k makes k mallocs of 100 bytes and frees
# k - 1 of them (test/programs/epoch_counts.c).  Run three ways: default (libunwind),
# CHURN_UNWIND=fp, and CHURN_EVENTS=0 (per-epoch histograms only, no event stream).
. test/lib.sh

build_c epoch_counts test/programs/epoch_counts.c

for mode in default fp histograms; do
    case $mode in
    default) traced "$WORK/$mode.zst" "$WORK/$mode.out" "$WORK/epoch_counts" ;;
    fp) CHURN_UNWIND=fp traced "$WORK/$mode.zst" "$WORK/$mode.out" "$WORK/epoch_counts" ;;
    histograms) CHURN_EVENTS=0 traced "$WORK/$mode.zst" "$WORK/$mode.out" "$WORK/epoch_counts" ;;
    esac
    analyze "$WORK/$mode.zst" "$WORK/$mode.json"
    check "$WORK/$mode.json" "$WORK/$mode.out" "$mode" <<'PY'
import sys
from churncheck import *
report, ph, mode = load(sys.argv[1]), phases(sys.argv[2]), sys.argv[3]
steps = 12
for k in range(1, steps + 1):
    e, what = ph["step%d" % k], "step %d, %s" % (k, mode)
    expect_epoch(report, e, what, allocs=k, frees=k - 1,
                 alloc_bytes=100 * k, free_bytes=100 * (k - 1))
    expect("%s live (count, bytes) change" % what, live_delta(report, e, what), (1, 100))
if mode == "histograms":
    expect("metadata.events with CHURN_EVENTS=0", field(report, "metadata", "events"), False)
    print("%s: per-epoch counts of %d steps exact" % (mode, steps))
    sys.exit(0)
# The compiler may call keep_block from more than one instruction (the same source line):
# sum over every entry whose stack holds it.
kept = growth_with(report, "keep_block")
if not kept:
    fail("%s: no growth entry for keep_block" % mode)
expect("%s: keep_block (allocs, frees, live_count, live_bytes) over its growth entries" % mode,
       tuple(sum(field(g, k) for g in kept)
             for k in ("allocs", "frees", "live_count", "live_bytes")),
       (steps, 0, steps, 100 * steps))
temps = growth_with(report, "temp_block")
got = sum(field(g, "allocs") for g in temps), sum(field(g, "frees") for g in temps)
expect("%s: temp_block (allocs, frees) over its growth entries" % mode, got,
       (steps * (steps - 1) // 2,) * 2)
for g in kept + temps:
    if not any(f.startswith("step ") for f in g["stack"]) or \
            not any(f.startswith("main ") for f in g["stack"]):
        fail("%s: stack %s lacks the callers step and main" % (mode, g["stack"][:4]))
print("%s: per-epoch counts of %d steps exact, stacks complete" % (mode, steps))
PY
done
