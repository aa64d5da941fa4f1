#!/bin/sh
# Objects freed by another thread than the one that allocated them, and addresses handed
# from the thread that freed them to another that allocates them again
# (test/programs/cross_thread.c: producer and consumer threads around a queue;
# cross_async.cc: 400 std::async tasks allocating, 400 deleting).  However the writer drains
# the threads, every free comes after its own allocation in the trace's records (the
# callsite's live count in stream order never goes below zero: the trace keeps each
# address's events in their order, docs/format.md) and pairs with it: no free of an object
# never allocated, no mismatch,
# nothing displaced, and exactly the blocks the program left are live at exit, as many as
# allocations minus frees.  With glibc, tcmalloc and jemalloc, and with an epoch every
# millisecond (an address's events then span epochs).
. test/lib.sh

build_c cross_thread test/programs/cross_thread.c -pthread
build_cxx cross_async test/programs/cross_async.cc -pthread

verify() {
    check "$1" "$2" "$3" "$4" "$5" <<'PY'
import sys
from churncheck import *
report, out, what, function = load(sys.argv[1]), open(sys.argv[2]).read(), sys.argv[3], sys.argv[4]
trace = sys.argv[5]
words = out.split("blocks ")[1].split()
blocks, left = int(words[0]), int(words[2])
if "reused" in out:
    reused = int(out.split("reused ")[1].split()[0])
    if reused == 0:
        fail("%s: no address freed by a consumer was allocated again by a producer: the test "
             "does not exercise reuse across threads" % what)
pairing = [w for w in field(report, "warnings")
           if "never allocated" in w or "differ from the live object" in w or "displaced" in w
           or "order" in w]
if pairing:
    fail("%s: frees not paired with their own allocations: %s" % (what, "; ".join(pairing)))
totals = field(report, "totals")
expect(what + ": objects live at exit, against allocations - frees",
       field(report, "leaked_at_exit", "count"), totals["allocs"] - totals["frees"])
entries = growth_with(report, function)
expect(what + ": %s (allocs, frees, live at the end)" % function,
       (sum(g["allocs"] for g in entries), sum(g["frees"] for g in entries),
        sum(g["live_count"] for g in entries)), (blocks, blocks - left, left))
lowest = heap_order(trace)["lowest_by_stack"]
expect(what + ": %s's fewest live objects in the records' order (below 0: a free before "
       "its allocation)" % function, min(lowest.get(g["stack_id"], 0) for g in entries), 0)
print("%s: %d blocks across threads, %d left live, all paired%s"
      % (what, blocks, left, ", %d addresses reused across threads" % reused if "reused" in out else ""))
PY
}

for allocator in $ALLOCATORS glibc-1ms; do
    use_allocator "${allocator%-1ms}"
    case $allocator in
    *-1ms) epoch_ms=1 ;;
    *) epoch_ms=0 ;;
    esac
    CHURN_EPOCH_MS=$epoch_ms traced "$WORK/$allocator.zst" "$WORK/$allocator.out" "$WORK/cross_thread"
    analyze "$WORK/$allocator.zst" "$WORK/$allocator.json"
    verify "$WORK/$allocator.json" "$WORK/$allocator.out" "queue, $allocator" xt_alloc \
        "$WORK/$allocator.zst"
done
use_allocator glibc
for run in 1 2 3; do
    traced "$WORK/async$run.zst" "$WORK/async$run.out" "$WORK/cross_async"
    analyze "$WORK/async$run.zst" "$WORK/async$run.json"
    verify "$WORK/async$run.json" "$WORK/async$run.out" "std::async run $run" async_alloc \
        "$WORK/async$run.zst"
done
