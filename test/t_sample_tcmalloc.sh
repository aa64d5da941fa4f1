#!/bin/sh
# CHURN_SAMPLE_BYTES through tcmalloc's hooks (shim/ways/way_tcmalloc.c, on_new and
# on_delete, whose unsampled calls take the sampled fast path): tcmalloc_hooks.c defines malloc
# in the executable and reports to hooks registered under Google tcmalloc's names, as workerd
# does.  Traced in full and sampled at N = 4 KiB and 512 KiB, two threads' 200,000 allocations
# (malloc, calloc, realloc; sizes that are not their allocated sizes) and frees (some by
# another thread) in the work epoch: the epoch's allocations, frees and bytes allocated equal
# the program's own count, and the totals the full trace's; only sampled allocations are in
# the sampled traces, and no free of an unsampled object.  (Every run's environment holds a
# CHURN_SAMPLE_BYTES value of the same length, so the program's own allocations are the same
# in all three.)
. test/lib.sh

build_c tcmalloc_hooks test/programs/tcmalloc_hooks.c -pthread -Wl,--export-dynamic

for n in 0000000 0004096 0524288; do
    CHURN_SAMPLE_BYTES=$n traced "$WORK/$n.zst" "$WORK/$n.out" "$WORK/tcmalloc_hooks"
    grep -q "defines malloc itself; tracing it through the tcmalloc way in" "$WORK/$n.out.err" ||
        fail "libchurn did not take the tcmalloc way in at $n: $(head -n 1 "$WORK/$n.out.err")"
    analyze "$WORK/$n.zst" "$WORK/$n.json"
done

check "$WORK" <<'PY'
import sys
from churncheck import *
work = sys.argv[1]
full = load(work + "/0000000.json")
for n in ("0000000", "0004096", "0524288"):
    label = "tcmalloc hooks at CHURN_SAMPLE_BYTES=%d" % int(n)
    report, ph = load("%s/%s.json" % (work, n)), phases("%s/%s.out" % (work, n))
    want = [int(w) for w in open("%s/%s.out" % (work, n)).read().split("expect ")[1].split()]
    if not field(report, "metadata", "allocator").startswith("tcmalloc"):
        fail("%s: allocator recorded as %r" % (label, report["metadata"]["allocator"]))
    row = [e for e in field(report, "epochs") if e["epoch"] == ph["work"]][0]
    expect(label + ": work epoch allocs, frees, bytes allocated",
           [row["allocs"], row["frees"], row["alloc_bytes"]], want)
    expect(label + ": unknown frees recorded", field(report, "totals", "unknown_frees"), 0)
    if n == "0000000":
        print("%s: work epoch %d allocations, %d frees, %d bytes exact" % (label, *want))
        continue
    expect(label + ": metadata.sample_bytes", field(report, "metadata", "sample_bytes"), int(n))
    for k in ("allocs", "frees", "alloc_bytes"):
        expect(label + ": totals." + k, field(report, "totals", k), field(full, "totals", k))
    samples = sum(g["estimate"]["samples"] for g in field(report, "growth"))
    allocs = field(report, "totals", "allocs")
    if not 0 < samples < allocs / (2 if n == "0004096" else 20):
        fail("%s: %d sampled allocations of %d" % (label, samples, allocs))
    print("%s: work epoch %d allocations, %d frees, %d bytes exact; %d sampled"
          % (label, want[0], want[1], want[2], samples))
PY
