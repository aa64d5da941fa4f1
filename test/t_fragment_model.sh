#!/bin/sh
# The allocator models of the fragmentation estimate, to the byte, on traces written by the
# independent encoder (test/tools/mktrace.py): jemalloc slab starts found from addresses,
# glibc objects straddling pages and owning whole ones, the parts of RSS per epoch, snapshots
# at epoch ends even when a short free of an object follows in the next epoch, the program's
# own mappings (not the allocator's) through mmap, munmap and mremap, recorded size classes, --model overriding the trace, and a bad --model name refused in one line.
. test/lib.sh

python3 - "$WORK" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
W = sys.argv[1]

def trace(name, allocator, records):
    recs = mktrace.prelude(0, 0, allocator=allocator) + records
    open(os.path.join(W, name), "wb").write(mktrace.build(
        {"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": 2, "records": recs}]}))

stacks = [["stack", 1, [0x10]], ["stack", 2, [0x20]], ["stack", 3, [0x30]]]
# jemalloc, class 48: slabs of lcm(48, 4096) = 12288 B.  A and B are objects 0 and 200 of the
# slab at 0x100000 (B in its third page), C is object 100 of the slab at 0x200000.
A, B, C = 0x100000, 0x100000 + 200 * 48, 0x200000 + 100 * 48
je = ("jemalloc", 4096, ["stats.resident", "stats.active", "stats.metadata"])
trace("jemalloc", je, stacks + [
    ["thread", 1], ["epoch", 0],
    ["alloc", 0, A, 40, 8, 1], ["alloc", 0, B, 40, 8, 2], ["alloc", 0, C, 40, 8, 3],
    ["epoch_end", {"epoch": 0, "rss": 1000000, "counters": [30000, 24576, 1000]}],
    ["epoch", 1], ["free", 0, A, 40, 8, 1, 1], ["free", 0, B, 40, 8, 2, 1],
    ["epoch_end", {"epoch": 1, "rss": 1000000, "counters": [30000, 12288, 1000]}],
    ["exit", 1, 0]])

# glibc, 4 KiB pages from 8 bytes before the object: D straddles two pages, E shares the
# second, F (3 pages usable) spans 4 pages of which the middle two are its own.
D, E, F = 0x10FF0, 0x11100, 0x20010
gl = ("glibc", 4096, ["mallinfo2.arena", "mallinfo2.hblkhd", "mallinfo2.uordblks",
                      "mallinfo2.fordblks", "mallinfo2.keepcost"])
trace("glibc", gl, stacks + [
    ["thread", 1], ["epoch", 0],
    ["alloc", 0, D, 40, 0, 1], ["alloc", 0, E, 24, 0, 2], ["alloc", 0, F, 12288, 0, 3],
    # the program maps 1 MiB and unmaps 256 KiB from its middle; the allocator maps 2 MiB of
    # its own (internal: heap, not the program's); a 64 KiB mapping moves and doubles
    ["map", 0, 0x7f0000000000, 1 << 20, 3, 0, 1, False],
    ["map", 1, 0x7f0000040000, 1 << 18, 0, 0, 1, False],
    ["map", 0, 0x7f1000000000, 2 << 20, 3, 0, 1, True],
    ["map", 0, 0x7f2000000000, 1 << 16, 3, 0, 1, False],
    ["map", 2, 0x7f2000000000, 1 << 16, 1 << 17, 0x7f3000000000, 1, False],
    ["epoch_end", {"epoch": 0, "rss": 500000, "counters": [135168, 0, 20000, 115168, 0]}],
    ["exit", 1, 0]])

tc = ("tcmalloc (Google, in the executable)", 8192, [])
trace("tcmalloc", tc, stacks + [
    ["size_classes", [[1152, 16384], [48, 8192]]],
    ["thread", 1], ["epoch", 0], ["alloc", 0, 0x300010, 48, 0, 1],
    ["epoch_end", {"epoch": 0, "rss": 100000}], ["exit", 1, 0]])
PY

for t in jemalloc glibc tcmalloc; do
    analyze "$WORK/$t" "$WORK/$t.json"
done
"$ANALYZE" --json --model page:8192 "$WORK/glibc" >"$WORK/page.json" 2>"$WORK/page.err" ||
    fail "--model page:8192 failed: $(tail -n 1 "$WORK/page.err")"
status=0
"$ANALYZE" --model slab "$WORK/glibc" >/dev/null 2>"$WORK/bad.err" || status=$?
[ "$status" -eq 2 ] || fail "--model slab: exit status $status, expected 2"
grep -q "^churn-analyze: --model wants" "$WORK/bad.err" || fail "--model slab: no one-line reason: $(head -n 1 "$WORK/bad.err")"

check "$WORK" <<'PY'
import os, sys
from churncheck import *
W = sys.argv[1]
def rows(name):
    return {r["epoch"]: r for r in field(load(os.path.join(W, name + ".json")), "fragmentation")}

je = rows("jemalloc")
r0 = je[0]
for key, want in dict(live_count=3, live_bytes=120, slack_bytes=24, span_bytes=24576, spans=2,
                      pinned_bytes=24576 - 144, heap_bytes=30000,
                      free_resident_bytes=30000 - 24576 - 1000, outside_heap_bytes=970000,
                      residual_bytes=1000, rss_bytes=1000000).items():
    expect("jemalloc epoch 0 %s" % key, r0[key], want)
expect("jemalloc epoch 1 (A and B freed by short frees)",
       (je[1]["live_count"], je[1]["span_bytes"], je[1]["spans"]), (1, 12288, 1))
report = load(os.path.join(W, "jemalloc.json"))
top = field(report, "fragmentation_callsites")
expect("jemalloc survivors", [(c["stack_id"], c["pinned_bytes"]) for c in top], [(3, 12288 - 48)])

gl = rows("glibc")[0]
expect("glibc span bytes: D's two pages shared with E, F's four", (gl["span_bytes"], gl["spans"]),
       (6 * 4096, 4))
expect("glibc free resident: free chunk bytes not inside occupied pages", gl["free_resident_bytes"],
       max(0, 115168 - (6 * 4096 - (40 + 24 + 12288))))
expect("glibc program_mapped_bytes (1 MiB - 256 KiB + 128 KiB moved)", gl["program_mapped_bytes"],
       (1 << 20) - (1 << 18) + (1 << 17))
pg = rows("page")[0]
expect("page:8192 span bytes (D and E in one page, F in two)", (pg["span_bytes"], pg["spans"]),
       (3 * 8192, 3))
model = field(load(os.path.join(W, "page.json")), "fragmentation_model")
expect("model from the option", (model["model"], model["source"], model["page_bytes"]),
       ("page", "option", 8192))

tc = load(os.path.join(W, "tcmalloc.json"))
model = field(tc, "fragmentation_model")
expect("tcmalloc model and recorded classes", (model["model"], model["recorded_classes"]),
       ("tcmalloc", [[48, 8192], [1152, 16384]]))
expect("tcmalloc span bytes", rows("tcmalloc")[0]["span_bytes"], 8192)
print("models exact: jemalloc slabs, glibc pages, page override, tcmalloc classes")
PY
