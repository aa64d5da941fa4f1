#!/bin/sh
# memalign, posix_memalign, aligned_alloc, valloc and pvalloc (test/programs/memalign.c):
# every result aligned (checked by the program) and each function's epoch exact in the trace.
. test/lib.sh

build_c memalign test/programs/memalign.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/memalign"
analyze "$WORK/trace.zst" "$WORK/report.json"

check "$WORK/report.json" "$WORK/out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
cases = [line.split()[1:] for line in open(sys.argv[2]) if line.startswith("expect ")]
expect("number of aligned functions", len(cases), 5)
for name, count, *sizes in cases:
    count, sizes = int(count), [int(s) for s in sizes]
    e = expect_epoch(report, ph[name], name, allocs=count, frees=count)
    if e["alloc_bytes"] not in sizes:
        fail("epoch of %s: alloc_bytes %d, expected %s" % (name, e["alloc_bytes"],
                                                           " or ".join(map(str, sizes))))
    expect("%s free_bytes" % name, e["free_bytes"], e["alloc_bytes"])
    expect("%s live (count, bytes) change" % name, live_delta(report, ph[name], name), (0, 0))
print("aligned family exact")
PY
