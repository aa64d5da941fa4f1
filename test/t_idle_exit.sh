#!/bin/sh
# A server stopped after an idle spell (memcached, nginx, postgres under SIGTERM): the exit's
# pass closes the last epoch and then a segment by the flush interval.  That segment must end
# with the exit's epoch, not the empty one after it: the trace's last epoch is the teardown,
# so the objects the teardown frees are kept until the exit (not "reclaimed" in the epoch
# before), and the exit's epoch, whose allocator counters are never read anew, is not
# reported as one whose reading was missed.
. test/lib.sh

build_c idle_exit test/programs/idle_exit.c
for run in 1 2 3; do
    CHURN_FLUSH_MS=10 traced "$WORK/t$run.zst" "$WORK/t$run.out" "$WORK/idle_exit"
    analyze "$WORK/t$run.zst" "$WORK/t$run.json"
    check "$WORK/t$run.zst" "$WORK/t$run.json" <<'PY'
import re, sys
from churncheck import *
report = load(sys.argv[2])
rows = list(epochs(report))
last = max(rows)
expect("the trace's last epoch (the exit's)", field(report, "metadata", "last_epoch"), last)
for h in segment_headers(sys.argv[1]):
    if h["last_epoch"] > last:
        fail("segment %d ends with epoch %d, after the exit's %d" % (h["seq"], h["last_epoch"], last))
kept = [g for g in field(report, "growth") if "idle_exit.c" in g["stack"][0]]
if not kept:
    fail("no growth row for the kept objects")
expect("the kept objects' retention", kept[0]["retention"], "kept_until_exit")
expect("their retained count", kept[0]["retained_count"], 250)
# A busy machine may leave an earlier epoch's reading behind (its own warning, rightly); the
# exit's epoch must not be among those counted.
missed = [r["epoch"] for r in field(report, "fragmentation")
          if r["epoch"] != last and r["free_resident_bytes"] is None]
said = [w for w in field(report, "warnings")
        if re.search(r"allocator counters (not read at the end|of \d+ epoch\(s\) read after)", w)]
counted = sum(int(re.search(r"(\d+) epoch\(s\)", w).group(1)) for w in said)
if counted != len(missed) or any(re.search(r"\(first: epoch %d\b" % last, w) for w in said):
    fail("the exit's epoch is reported as a missed reading: %d counted, %d earlier epochs "
         "without a reading: %s" % (counted, len(missed), " | ".join(said)))
PY
done
echo "ok: 3 runs, the last segment ends with the exit's epoch; 250 objects kept until the exit"
