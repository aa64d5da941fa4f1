#!/bin/sh
# The usable size an allocation's event carries is glibc's malloc_usable_size of the block,
# exactly (shim/record/event.c asks the allocator behind it).  test/programs/usable_sizes.c
# keeps blocks of every kind live to the end (small, above a page, mapped, split from free
# chunks of other sizes; malloc, calloc, memalign, realloc) and prints each callsite's count,
# requested bytes and usable bytes by malloc_usable_size; the report's fragmentation
# callsites must say the same.
. test/lib.sh

build_c usable_sizes test/programs/usable_sizes.c -Itest/programs -Iinclude
traced "$WORK/trace.zst" "$WORK/out" "$WORK/usable_sizes"
analyze "$WORK/trace.zst" "$WORK/report.json"

check "$WORK/report.json" "$WORK/out" <<'PY'
import sys
from churncheck import *
report, out = load(sys.argv[1]), open(sys.argv[2]).read().split("\n")
sites = field(report, "fragmentation_callsites")
lines = [l.split() for l in out if l.startswith("site ")]
if len(lines) != 5:
    fail("the program printed %d site lines, not 5" % len(lines))
for _, name, count, nbytes, usable in lines:
    rows = [r for r in sites if any(name in f for f in r["stack"][:3])]
    got = tuple(sum(r[k] for r in rows) for k in ("live_count", "live_bytes", "usable_bytes"))
    expect(name + " (live count, bytes, usable bytes)", got, (int(count), int(nbytes), int(usable)))
PY
