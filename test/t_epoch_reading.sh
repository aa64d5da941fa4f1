#!/bin/sh
# An epoch's CPU time and RSS come from a reading at most 1 ms older than its end
# (shim/epoch.c): epochs that far apart see their own RSS and CPU, a burst of epochs shares
# readings, and the CPU time of all epochs adds up to the process's (test/programs/epoch_reading.c).
. test/lib.sh

build_c epoch_reading test/programs/epoch_reading.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/epoch_reading"
analyze "$WORK/trace.zst" "$WORK/report.json"
check "$WORK/report.json" "$WORK/out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
spun = next(int(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("cpu_at_spin_end"))
touch = epoch(report, ph["touch"], "touch")
before = epoch(report, ph["before"], "before")
grew = touch["rss_bytes"] - before["rss_bytes"]
if grew < 60 << 20:
    fail("RSS grew %d B in the epoch that touched 64 MiB" % grew)
spin = epoch(report, ph["spin"], "spin")
if spin["cpu_ns"] < 19000000:
    fail("the epoch that spun 20 ms of CPU shows %d ns" % spin["cpu_ns"])
total = sum(e["cpu_ns"] for e in field(report, "epochs") if e["epoch"] <= ph["spin"])
# The trace counts from libchurn's start; the process also ran the loader before it.
if not spun - 5000000 <= total <= spun + 1000000:
    fail("CPU time of the epochs up to spin's end %d ns, the process's own %d ns" % (total, spun))
burst = [e for e in field(report, "epochs") if ph["burst"] <= e["epoch"] < ph["spin"]]
if len(burst) < 2000:
    fail("%d epochs in the burst of 2000" % len(burst))
print("touch: RSS +%d MiB; spin: %.1f ms CPU; epochs up to spin: %.1f ms CPU, process %.1f ms"
      % (grew >> 20, spin["cpu_ns"] / 1e6, total / 1e6, spun / 1e6))
PY
