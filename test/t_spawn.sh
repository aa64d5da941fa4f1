#!/bin/sh
# fork + exec (system() under the shim, test/programs/spawn.c): the shell and the program it
# runs inherit LD_PRELOAD and CHURN_OUT, yet the parent's trace stays its own and whole, and
# whatever traces the started programs leave beside it are readable.
. test/lib.sh

build_c spawn test/programs/spawn.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/spawn"
analyze "$WORK/trace.zst" "$WORK/report.json"
check "$WORK/report.json" "$WORK/out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
pid = int(open(sys.argv[2]).read().split("pid ")[1])
expect("metadata.pid of the parent's trace", field(report, "metadata", "pid"), pid)
expect_epoch(report, ph["before"], "before system()", allocs=10, frees=0, alloc_bytes=7770)
expect_epoch(report, ph["after"], "after system()", allocs=0, frees=10, free_bytes=7770)
expect("exit of the parent's trace", field(report, "metadata", "exit", "how"), "normal")
print("parent trace intact across system()")
PY
others=0
for f in "$WORK"/trace.*.zst; do
    [ -e "$f" ] || continue
    others=$((others + 1))
    analyze "$f" "$f.json"
done
echo "$others trace(s) of started programs beside the parent's, all readable"
