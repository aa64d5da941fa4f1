#!/bin/sh
# A stack overflow caught by a SIGSEGV handler that siglongjmps back (interpreters report a
# too-deep recursion so), ten times in a row (test/programs/overflow_longjmp.c): a recursion
# that mallocs and frees at every level until the stack ends, on the main thread, on a
# 256 KiB thread, and first in a coroutine whose stack the jump abandons, then on the main
# thread, so that the stack ends inside malloc and free, and inside libchurn.  The
# program runs as natively; the 100 blocks after_overflow keeps after each overflow are all in
# the trace with their stacks.  A library between libchurn and glibc
# (test/programs/count_alloc.c) counts the recursion's mallocs and frees that reached the
# allocator: every one of those mallocs is in the trace or counted as dropped (the stack's
# last bytes are never libchurn's: the events of the levels within 1 KiB of the stack's end,
# four or more an overflow, are dropped), and so is every free.  Under CHURN_SAMPLE_BYTES,
# whose fast path holds the guard around the allocator's call, the same overflows: the
# totals count every malloc and free the allocator saw, and the 1,000 blocks kept.
. test/lib.sh

build_c overflow_longjmp test/programs/overflow_longjmp.c -pthread
gcc $PROG_CFLAGS -std=gnu11 -shared -fPIC -o "$WORK/count_alloc.so" test/programs/count_alloc.c \
    >"$WORK/count_alloc.build.log" 2>&1 ||
    fail "cannot compile test/programs/count_alloc.c: $(tail -n 1 "$WORK/count_alloc.build.log")"
for where in main thread coroutine; do
    arg=
    [ $where = main ] || arg=$where
    "$WORK/overflow_longjmp" 10 $arg >"$WORK/native.$where" 2>&1 ||
        fail "overflow_longjmp $arg fails natively: $(tail -n 1 "$WORK/native.$where")"
    CHURN_PRELOAD_EXTRA="$WORK/count_alloc.so" traced "$WORK/$where.zst" "$WORK/$where.out" \
        "$WORK/overflow_longjmp" 10 $arg
    analyze "$WORK/$where.zst" "$WORK/$where.json"
    check "$WORK/$where.json" "$WORK/$where.out.err" $where <<'PY'
import sys
from churncheck import *
report, where = load(sys.argv[1]), sys.argv[3]
words = open(sys.argv[2]).read().split("allocator saw ")[1].split()
made, freed = int(words[0]), int(words[3])
after = growth_with(report, "after_overflow")
expect("after_overflow's blocks (allocs, live)", (sum(g["allocs"] for g in after),
       sum(g["live_count"] for g in after)), (1000, 1000))
rec = [f for f in field(report, "functions") if f["function"] == "recurse"]
allocs, frees = sum(f["allocs"] for f in rec), sum(f["frees"] for f in rec)
dropped = field(report, "totals", "dropped_events")
# Every event the allocator saw and the trace lacks is a dropped one.  An overflow may cut
# short a free already traced (in the trace, not the allocator's count) and a call whose event
# was counted as dropped on its way to the allocator: one of each an overflow at most.
missing = (made - allocs) + (freed - frees)
if dropped < 4 * 10:
    fail("%d events dropped by 10 overflows: the levels near the stack's end were recorded"
         % dropped)
if made < allocs or not dropped - 20 <= missing <= dropped:
    fail("the allocator made %d of the recursion's blocks and took %d back; the trace has %d "
         "and %d, and %d events dropped" % (made, freed, allocs, frees, dropped))
expect("unknown frees", field(report, "totals", "unknown_frees"), 0)
print("%s: 10 overflows, the 1,000 blocks kept after them traced; the allocator made %d of "
      "the recursion's blocks and took %d back: %d and %d traced, %d events dropped"
      % (where, made, freed, allocs, frees, dropped))
PY
    CHURN_SAMPLE_BYTES=524288 CHURN_PRELOAD_EXTRA="$WORK/count_alloc.so" \
        traced "$WORK/$where.sampled.zst" "$WORK/$where.sampled.out" "$WORK/overflow_longjmp" 10 $arg
    analyze "$WORK/$where.sampled.zst" "$WORK/$where.sampled.json"
    check "$WORK/$where.sampled.json" "$WORK/$where.sampled.out.err" $where <<'PY'
import sys
from churncheck import *
report, where = load(sys.argv[1]), sys.argv[3]
words = open(sys.argv[2]).read().split("allocator saw ")[1].split()
made, freed = int(words[0]), int(words[3])
allocs, frees = field(report, "totals", "allocs"), field(report, "totals", "frees")
# The recursion's blocks and the 1,000 kept, besides the program's few others.
if allocs < made + 1000 or frees < freed:
    fail("sampled: the allocator made %d of the recursion's blocks and took %d back, and 1,000 "
         "were kept after; the totals count %d allocations and %d frees"
         % (made, freed, allocs, frees))
print("sampled %s: %d allocations and %d frees counted (the allocator saw %d and %d of the "
      "recursion's, 1,000 kept)" % (where, allocs, frees, made, freed))
PY
done
