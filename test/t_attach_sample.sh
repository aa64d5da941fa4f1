#!/bin/sh
# churn attach --sample-bytes N (CHURN_SAMPLE_BYTES): four traces of one attach_busy hold
# process (test/programs/attach_busy.c: 100-byte blocks allocated and freed on command, nothing
# else allocated), one copy of libchurn started again for each.  At N = 100 a block is sampled
# with probability 1 - exp(-1) = 0.63, so every trace holds sampled and unsampled blocks.
#   s1, sampled, two epochs (--epoch-signal): the trace says it is sampled, its totals and
#       each epoch's allocations, frees and bytes are exact, it records fewer objects than
#       were allocated and more than none.
#   s2, sampled: the 400 frees of s1's blocks are counted as frees, and none is recorded (its
#       sampled set starts empty: a block sampled in s1 is not a sampled object here), nor the
#       frees of its own unsampled blocks: no free of an object the trace does not know.
#   s3, not sampled, after two sampled ones: a full trace (every object, the frees of s2's
#       blocks recorded as frees of objects from before the attach).
#   s4, sampled again: no free recorded of an object it did not sample (s2's sampled blocks,
#       freed untraced by s3's full trace, at the addresses s4 allocates again).
. test/lib.sh
. test/attach_hold.sh

CHURN=$ROOT/build/churn
[ -x "$CHURN" ] || fail "build/churn is missing: run make"
build_c attach_busy test/programs/attach_busy.c -pthread

start hold "$WORK/attach_busy" hold

held s1 --sample-bytes 100 --epoch-signal USR1 -- "alloc 300" USR1 "alloc 100"
held s2 --sample-bytes 100 -- "free" "alloc 200" "free" "alloc 50"
held s3 -- "free" "alloc 10"
held s4 --sample-bytes 100 -- "alloc 100" "free" "alloc 100" "free"
finish
[ "$STATUS" -eq 0 ] || fail "attach_busy hold exited with status $STATUS"
for h in s2 s3 s4; do
    grep -q "loaded by an earlier attach started again" "$WORK/$h.attach" ||
        fail "$h: a copy of libchurn loaded again: $(cat "$WORK/$h.attach")"
done
grep -q "allocations sampled: one sample per 100 bytes" "$WORK/s1.txt" ||
    fail "s1: the report does not say the trace is sampled: $(head -n 5 "$WORK/s1.txt")"
grep -q "allocations sampled" "$WORK/s3.txt" && fail "s3: the report of a full trace says it is sampled"

check "$WORK" <<'EOF'
import sys
from churncheck import load, field, expect, fail
d = sys.argv[1]
r = {n: load("%s/%s.json" % (d, n)) for n in ("s1", "s2", "s3", "s4")}
def recorded(rep):
    """The sampled allocations in the trace: the samples of its callsites."""
    return sum(g["estimate"]["samples"] for g in field(rep, "growth"))
# allocs, bytes, frees (all counted), frees of objects the trace did not record allocated
want = {"s1": (400, 40000, 0, 0), "s2": (250, 25000, 600, 0), "s3": (10, 1000, 0, 50),
        "s4": (200, 20000, 210, 0)}
for n, w in want.items():
    t = field(r[n], "totals")
    expect(n + ": allocs, bytes, frees, frees of objects it did not record",
           (t["allocs"], t["alloc_bytes"], t["frees"], t["unknown_frees"]), w)
    expect(n + ": exit", field(r[n], "metadata", "exit", "how"), "detach")
    expect(n + ": attached", field(r[n], "metadata", "attached"), True)
for n in ("s1", "s2", "s4"):
    expect(n + ": metadata.sample_bytes", field(r[n], "metadata", "sample_bytes"), 100)
    expect(n + ": stack_sample", field(r[n], "metadata", "stack_sample"), 1)
expect("s3: metadata.sample_bytes", r["s3"]["metadata"].get("sample_bytes", 0), 0)
expect("s3: stack_sample", field(r["s3"], "metadata", "stack_sample"), 1)
expect("s1: epochs (allocs, frees, bytes)",
       [(e["allocs"], e["frees"], e["alloc_bytes"]) for e in field(r["s1"], "epochs")],
       [(300, 0, 30000), (100, 0, 10000)])
for n, allocs in (("s1", 400), ("s4", 200)):
    k = recorded(r[n])
    if not 0 < k < allocs:
        fail("%s: %d of %d allocations recorded at N = 100 (each sampled with probability 0.63)"
             % (n, k, allocs))
k2 = recorded(r["s2"])
if not 0 < k2 < 250:
    fail("s2: %d of 250 allocations recorded" % k2)
# s2 keeps 50 blocks: the estimate of what is live is that of its own samples
expect("s3: live at the detach, every object", field(r["s3"], "leaked_at_exit", "count"), 10)
print("sampled attach: s1 %d of 400 allocations recorded, epochs exact; s2 %d of 250, 600 frees "
      "counted, none of an object it did not sample; s3 full; s4 %d of 200, none stale"
      % (recorded(r["s1"]), k2, recorded(r["s4"])))
EOF
echo "attach --sample-bytes: four traces of one copy, counts exact, sampled sets apart"
