#!/bin/sh
# libchurn's own memory (rings, live map, stack table, buffers, the writer's stack, its own
# .bss) is a part of the RSS split of its own, not inside the program's "outside the heap".
# The referee is the kernel: test/programs/own_memory.c sums the resident kilobytes of its
# nameless mappings (/proc/self/smaps), natively and traced; the difference is what tracing
# added there, and the trace's libchurn_bytes (counted by mincore over libchurn's own list of
# its mappings) must be most of it and no more than it.  libchurn.so's data segment, relocated
# at load, is file-backed, so not nameless: the program adds its resident kilobytes (its
# writable mappings of libchurn.so) to what tracing added.  The parts still add up to RSS.
. test/lib.sh

build_c own_memory test/programs/own_memory.c
native=$("$WORK/own_memory" | sed -n 's/^nameless \([0-9]*\) kB$/\1/p')
[ -n "$native" ] || fail "own_memory printed nothing natively"
traced "$WORK/trace.zst" "$WORK/out" "$WORK/own_memory"
under=$(sed -n 's/^nameless \([0-9]*\) kB$/\1/p' "$WORK/out")
data=$(sed -n 's/^libchurn data \([0-9]*\) kB$/\1/p' "$WORK/out")
[ -n "$under" ] && [ -n "$data" ] || fail "own_memory printed nothing under the shim"
analyze "$WORK/trace.zst" "$WORK/report.json"
check "$WORK/report.json" "$native" "$under" "$data" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
native, under, data = (int(a) * 1024 for a in sys.argv[2:5])
added = under - native + data
rows = field(report, "fragmentation")
own = field(rows[-1], "libchurn_bytes")
if own is None:
    fail("no libchurn_bytes in the last row")
# other libraries' .bss grows a little under libchurn too: a quarter either way, and never
# more than what tracing added plus 64 KiB
if not (0.75 * added <= own <= added + 65536):
    fail("libchurn_bytes %d B, while tracing added %d B of nameless resident memory and libchurn's data"
         % (own, added))
for r in rows:
    if r["rss_bytes"] is None or r["outside_heap_bytes"] is None:
        continue
    parts = (r["live_bytes"] + r["slack_bytes"] + r["pinned_bytes"] + (r["free_resident_bytes"] or 0)
             + r["outside_heap_bytes"] + r["libchurn_bytes"] + r["residual_bytes"])
    expect("epoch %d: the parts add up to RSS" % r["epoch"], parts, r["rss_bytes"])
print("libchurn_bytes %d KiB; tracing added %d KiB of nameless resident memory and libchurn's data"
      % (own >> 10, added >> 10))
PY
"$ANALYZE" "$WORK/trace.zst" >"$WORK/report.txt" 2>&1 || fail "text report failed"
grep -Eq '^ +epoch +rss +live +slack +pinned +free-res +outside +libchurn +residual$' "$WORK/report.txt" ||
    fail "no libchurn column in the live-vs-fragmented table"
