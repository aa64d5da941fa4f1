#!/bin/sh
# Blocks allocated on one thread and freed on another (test/programs/handoff.c), 4,000 at a
# time: every free comes after its allocation in the trace's records (docs/format.md, "Order
# of events": the callsite's live count in stream order never goes below zero) and is
# paired: no free of an object "never allocated", no mismatch, the epoch's counts exact,
# nothing left live.
. test/lib.sh

build_c handoff test/programs/handoff.c -pthread
traced "$WORK/trace.zst" "$WORK/out" "$WORK/handoff"
analyze "$WORK/trace.zst" "$WORK/report.json"

check "$WORK/report.json" "$WORK/out" "$WORK/trace.zst" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
words = open(sys.argv[2]).read().split("blocks ")[1].split()
blocks, size = int(words[0]), int(words[2])
pairing = [w for w in field(report, "warnings")
           if "never allocated" in w or "differ from the live object" in w or "displaced" in w]
if pairing:
    fail("cross-thread frees not paired with their allocations: %s" % "; ".join(pairing))
expect_epoch(report, ph["handoff"], "handoff", allocs=blocks, frees=blocks,
             alloc_bytes=blocks * size, free_bytes=blocks * size)
entries = growth_with(report, "handoff_alloc")
expect("handoff_alloc (allocs, live_count)",
       (sum(g["allocs"] for g in entries), sum(g["live_count"] for g in entries)), (blocks, 0))
lowest = heap_order(sys.argv[3])["lowest_by_stack"]
expect("handoff_alloc's fewest live objects in the records' order (below 0: a free before "
       "its allocation)", min(lowest.get(g["stack_id"], 0) for g in entries), 0)
print("%d blocks freed on another thread, all paired" % blocks)
PY
