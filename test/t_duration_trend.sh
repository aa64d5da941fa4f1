#!/bin/sh
# A program whose per-epoch work grows with its heap (test/programs/slowing.c: each epoch adds
# 2,000 nodes and walks the whole list 20 times): the analyzer's trends must show epoch
# duration rising, correlated with live bytes.  The work grows from nothing to about 4 M node
# visits per epoch.  Scheduling noise on a shared machine stretches single epochs a lot, so
# the assertions are on the rank correlation (robust to such spikes) and on the later epochs
# being slower than the early ones: orders, not timings.
. test/lib.sh

build_c slowing test/programs/slowing.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/slowing" 100
analyze "$WORK/trace.zst" "$WORK/report.json"

check "$WORK/report.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
trends = field(report, "trends")
live = field(trends, "live_bytes_per_epoch")
wall = field(trends, "wall_ns_per_epoch")
corr = field(trends, "duration_vs_live_rank_correlation")
# 2,000 nodes of 16 bytes per epoch
if abs(live - 2000 * 16) > 1:
    fail("live_bytes_per_epoch %r, expected 32000" % live)
if not corr > 0.5:
    fail("duration_vs_live_rank_correlation %r <= 0.5: slowing epochs not detected" % corr)
walls = [e["wall_ns"] for e in field(report, "epochs")[1:100]]
early, late = sorted(walls[:20])[10], sorted(walls[-20:])[10]
if not late > 2 * early:
    fail("median epoch of the last 20 (%d ns) is not 2x the first 20 (%d ns)" % (late, early))
print("duration trend: %+.0f ns/epoch, rank correlation %.3f with live bytes" % (wall, corr))
PY
