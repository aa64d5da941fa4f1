#!/bin/sh
# Eight threads churning at once (test/programs/threads.c): the epoch they share holds exactly
# the allocations and frees they made, including frees of blocks another thread allocated,
# and the live set does not move.  With glibc, and with tcmalloc and jemalloc preloaded after
# the shim (their per-thread caches hand blocks across threads differently).
. test/lib.sh

build_c threads test/programs/threads.c -pthread

for allocator in $ALLOCATORS; do
    use_allocator "$allocator"
    traced "$WORK/$allocator.zst" "$WORK/$allocator.out" "$WORK/threads"
    analyze "$WORK/$allocator.zst" "$WORK/$allocator.json"
    check "$WORK/$allocator.json" "$WORK/$allocator.out" "$allocator" "$WORK/$allocator.zst" <<'PY'
import sys
from churncheck import *
report, ph, allocator = load(sys.argv[1]), phases(sys.argv[2]), sys.argv[3]
count, nbytes = [int(w) for w in open(sys.argv[2]).read().split("expect ")[1].split()]
what = "8 threads churning with " + allocator
expect_epoch(report, ph["churn"], what, allocs=count, frees=count, alloc_bytes=nbytes,
             free_bytes=nbytes)
expect("live (count, bytes) change, " + what, live_delta(report, ph["churn"], "churn"), (0, 0))
entries = growth_with(report, "churn_alloc")
if not entries:
    fail("no growth entry for churn_alloc with " + allocator)
expect("churn_alloc (allocs, frees) over its growth entries, " + allocator,
       (sum(g["allocs"] for g in entries), sum(g["frees"] for g in entries)), (count, count))
expect("churn_alloc live_count, " + allocator, sum(g["live_count"] for g in entries), 0)
# A free of another thread's block comes after its allocation in the records' order.
lowest = heap_order(sys.argv[4])["lowest_by_stack"]
expect("churn_alloc's fewest live objects in the records' order, " + allocator,
       min(lowest.get(g["stack_id"], 0) for g in entries), 0)
# A cross-thread free written before its allocation would come out as an unknown free.
# (Whole-process unknown_frees is not 0 with tcmalloc: one free at start-up, before main.)
unknown = [r for r in records(sys.argv[4]) if r["tag"] == 0x30 and r["epoch"] == ph["churn"]]
expect("unknown frees in the churn epoch, " + allocator, len(unknown), 0)
print("%s: %d allocs and frees of 8 threads exact" % (allocator, count))
PY
done
