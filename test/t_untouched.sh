#!/bin/sh
# A heap whose pages were never touched (a 64 MiB pool of which one page is written, as
# memcached -L preallocates its slabs): RSS stays below the heap in epochs that allocate
# nothing, which no age of the RSS reading explains.  Those epochs are "heap not all
# resident", not "rss stale", with no outside-the-heap figure; the warning says so.
. test/lib.sh

build_c untouched test/programs/untouched.c
traced "$WORK/t.zst" "$WORK/t.out" "$WORK/untouched"
analyze "$WORK/t.zst" "$WORK/t.json"
"$ANALYZE" "$WORK/t.zst" >"$WORK/t.txt" 2>&1 || fail "churn-analyze (text) failed"
check "$WORK/t.json" "$WORK/t.txt" <<'PY'
import sys
from churncheck import *
r = load(sys.argv[1])
text = open(sys.argv[2]).read()
rows = {x["epoch"]: x for x in field(r, "fragmentation")}
quiet = [rows[e] for e in rows if e not in (min(rows), max(rows))]
if len(quiet) < 2:
    fail("only %d epochs between the pool's and the exit's" % len(quiet))
for x in quiet:
    if x["rss_bytes"] >= 32 << 20:
        fail("epoch %d: RSS %d: the pool's pages are resident" % (x["epoch"], x["rss_bytes"]))
    expect("epoch %d rss_stale" % x["epoch"], x["rss_stale"], False)
    expect("epoch %d heap_not_resident" % x["epoch"], x.get("heap_not_resident"), True)
    expect("epoch %d outside_heap_bytes" % x["epoch"], x["outside_heap_bytes"], None)
warn = [w for w in field(r, "warnings") if w.startswith("RSS below the heap")]
if not warn or "never touched" not in warn[0]:
    fail("no warning of a heap not all resident: %s" % field(r, "warnings"))
if "RSS below the heap" not in text or "RSS reading older than the epoch's end at %d" % (len(quiet) + 1) in text:
    fail("the text report's warnings do not say it")
PY
echo "ok: a 64 MiB pool with one page written: its quiet epochs are 'heap not all resident'"
