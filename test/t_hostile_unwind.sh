#!/bin/sh
# Code whose CFI or layout a tracer must not trust (test/programs/hostile_frames.S).
#
# An assembly function calls malloc under a CFA rule that dereferences r12, with r12 pointing
# at the null page, a PROT_NONE page, a non-canonical address, a word of garbage, and a word
# holding an address whose return-address slot is unreadable: under every unwinder
# (CHURN_UNWIND cfi, libunwind, fp; verify is the test mode whose reference, libunwind's own
# unwinder, trusts the CFI) the program runs to its end as natively, and each of its
# allocations is in the trace with that function at the top of its stack.
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
