#!/bin/sh
# An epoch's CPU time and RSS come from a reading at most 1 ms older than its end
# (shim/record/epoch.c): epochs that far apart see their own RSS and CPU, a burst of epochs shares
# readings, and the epochs' CPU time adds up to the process's (test/programs/epoch_reading.c).
. test/lib.sh

build_c epoch_reading test/programs/epoch_reading.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/epoch_reading"
analyze "$WORK/trace.zst" "$WORK/report.json"
check "$WORK/report.json" "$WORK/out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
first, spun = next(tuple(map(int, l.split()[1:])) for l in open(sys.argv[2]) if l.startswith("cpu "))
touch = epoch(report, ph["touch"], "touch")
before = epoch(report, ph["before"], "before")
grew = touch["rss_bytes"] - before["rss_bytes"]
if grew < 60 << 20:
    fail("RSS grew %d B in the epoch that touched 64 MiB" % grew)
spin = epoch(report, ph["spin"], "spin")
if spin["cpu_ns"] < 19000000:
    fail("the epoch that spun 20 ms of CPU shows %d ns" % spin["cpu_ns"])
total = sum(e["cpu_ns"] for e in field(report, "epochs") if ph["before"] <= e["epoch"] <= ph["spin"])
# The tick that began "before" may have used a reading up to 1 ms old; spin's end read anew.
if not spun - first - 500000 <= total <= spun - first + 1500000:
    fail("CPU time of the epochs from before to spin %d ns, the process's own over them %d ns"
         % (total, spun - first))
last = max(field(report, "epochs"), key=lambda e: e["epoch"])
if last["epoch"] != ph["end"] or last["cpu_ns"] < 450000:
    fail("the last epoch (%d, end %d) shows %d ns of CPU, not the 0.5 ms spun before exit"
         % (last["epoch"], ph["end"], last["cpu_ns"]))
burst = [e for e in field(report, "epochs") if ph["burst"] <= e["epoch"] < ph["spin"]]
if len(burst) < 2000:
    fail("%d epochs in the burst of 2000" % len(burst))
print("touch: RSS +%d MiB; spin: %.1f ms CPU; epochs from before to spin: %.2f ms CPU, the "
      "process %.2f ms" % (grew >> 20, spin["cpu_ns"] / 1e6, total / 1e6, (spun - first) / 1e6))
PY
