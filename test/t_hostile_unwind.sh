#!/bin/sh
# Code whose CFI or layout a tracer must not trust (test/programs/hostile_frames.S).
#
# An assembly function calls malloc under a CFA rule that dereferences r12, with r12 pointing
# at the null page, a PROT_NONE page, a non-canonical address, a word of garbage, and a word
# holding an address whose return-address slot is unreadable.  Under the default (cfi), whose
# walker gives up on the expression rule and hands the stack to libunwind over checked reads,
# under CHURN_UNWIND=libunwind, which checks every read, and under fp, the program runs to its
# end as natively, and each of its allocations is in the trace with that function at the top
# of its stack.  verify is left out: its reference is libunwind's local unwinder, which trusts
# the CFI as written.
#
# CHURN_EPOCH_AT on a function whose loop jumps back into its first bytes from more than 512
# bytes away: the entry is not patched (one line on stderr says why), and the program's sums
# are right.  The same loop with its header past the first 5 bytes is hooked: every call
# begins an epoch.
. test/lib.sh

build_c hostile_unwind test/programs/hostile_unwind.c test/programs/hostile_frames.S
n=40
"$WORK/hostile_unwind" wild $n >"$WORK/native.wild" 2>&1 || fail "hostile_unwind wild fails natively"
for unwind in cfi libunwind fp; do
    CHURN_UNWIND=$unwind traced "$WORK/wild.$unwind.zst" "$WORK/wild.$unwind" \
        "$WORK/hostile_unwind" wild $n
    analyze "$WORK/wild.$unwind.zst" "$WORK/wild.$unwind.json"
    check "$WORK/wild.$unwind.json" $n $unwind <<'PY'
import sys
from churncheck import *
report, n, unwind = load(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
blocks = [g for g in field(report, "growth") if g["live_count"] and 700 <= g["live_bytes"] // g["live_count"] <= 704]
expect("wild-CFA blocks (allocs, live)", (sum(g["allocs"] for g in blocks),
       sum(g["live_count"] for g in blocks)), (5 * n, 5 * n))
tops = sorted({g["stack"][0].split()[0] if g["stack"] else "(none)" for g in blocks})
if tops != ["wild_cfa_alloc"]:
    fail("the wild-CFA blocks' stacks start at %s, not wild_cfa_alloc" % tops)
print("CHURN_UNWIND=%s: %d allocations under a wild CFA rule, all traced" % (unwind, 5 * n))
PY
done

"$WORK/hostile_unwind" sums 30 >"$WORK/native.sums" 2>&1 || fail "hostile_unwind sums fails natively"
rm -f "$WORK"/backedge.*
status=0
CHURN_EPOCH_AT=backedge_sum CHURN_OUT="$WORK/backedge.zst" LD_PRELOAD="$SHIM" \
    "$WORK/hostile_unwind" sums 30 >"$WORK/backedge.out" 2>"$WORK/backedge.err" || status=$?
[ $status -eq 0 ] || fail "CHURN_EPOCH_AT=backedge_sum: the program exited with status $status: $(tail -n 1 "$WORK/backedge.err")"
cmp -s "$WORK/native.sums" "$WORK/backedge.out" || fail "CHURN_EPOCH_AT=backedge_sum changed the output: $(cat "$WORK/backedge.out")"
grep -q 'CHURN_EPOCH_AT: cannot hook "backedge_sum" .*lands inside the bytes being moved' "$WORK/backedge.err" ||
    fail "no line on why backedge_sum is not hooked: $(cat "$WORK/backedge.err")"
echo "backedge_sum left alone: $(cat "$WORK/backedge.err")"

CHURN_EPOCH_AT=far_loop_sum traced "$WORK/far.zst" "$WORK/far.out" "$WORK/hostile_unwind" sums 30
cmp -s "$WORK/native.sums" "$WORK/far.out" || fail "CHURN_EPOCH_AT=far_loop_sum changed the output"
analyze "$WORK/far.zst" "$WORK/far.json"
check "$WORK/far.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
expect("epochs begun by 30 calls of far_loop_sum", field(report, "metadata", "last_epoch"), 30)
print("far_loop_sum hooked: 30 calls, 30 epochs")
PY
