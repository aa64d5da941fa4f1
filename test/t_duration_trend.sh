#!/bin/sh
# A program whose per-epoch work grows with its heap (test/programs/slowing.c: each epoch adds
# 2,000 nodes and walks the whole list 200 times): the analyzer's trends must show epoch
# duration rising, correlated with live bytes.  The work grows from nothing to about 40 M node
# visits per epoch.  Wall time on a shared machine follows its load as much as the work: with
# both cores busy, 3 runs in 12 gave a rank correlation of wall time with live bytes under
# 0.5 (another a late/early ratio of 1.6), as other processes came and went over the run's
# seconds.  So the analyzer's figure is checked against the rank correlation computed here
# from its own epoch rows (exact), and the slowing itself by each epoch's CPU time, which the
# load does not stretch (rank correlation 0.988 or more, late/early 6.1 or more, in 10 runs).
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
# over the steady window, one row per epoch, up to the last before the exit's
rows = window_rows(report)
first = field(report, "steady_window", "first")
if [e["epoch"] for e in rows] != list(range(first, 100)):
    fail("the rank correlation is over %d rows, not epochs %d..99" % (len(rows), first))

if abs(corr - rank_correlation(report, "wall_ns")) > 1e-6:
    fail("duration_vs_live_rank_correlation %r; its epochs' wall times give %r"
         % (corr, rank_correlation(report, "wall_ns")))
cpu_corr = rank_correlation(report, "cpu_ns")
if not cpu_corr > 0.9:
    fail("epochs' CPU time has a rank correlation %.3f with live bytes: the slowing is not seen"
         % cpu_corr)
cpus = [e["cpu_ns"] for e in rows[1:]]
early, late = sorted(cpus[:20])[10], sorted(cpus[-20:])[10]
if not late > 2 * early:
    fail("median epoch CPU time of the last 20 (%d ns) is not 2x the first 20 (%d ns)" % (late, early))
print("duration trend: %+.0f ns/epoch, rank correlation %.3f with live bytes (CPU time's %.3f, "
      "late/early %.1f)" % (wall, corr, cpu_corr, late / early))
PY
