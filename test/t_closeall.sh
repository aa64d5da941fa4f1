#!/bin/sh
# A program that closes every descriptor from 3 up (a close loop, close_range, closefrom) and
# then opens and dup2s its own files (test/programs/closeall.c): its files get the numbers
# they would get without libchurn, the trace is not written into them, and the trace goes on
# (libchurn's descriptors sit high and the program's closes pass over them).
. test/lib.sh

build_c closeall test/programs/closeall.c
for how in loop close_range closefrom; do
    mkdir -p "$WORK/$how"
    (cd "$WORK/$how" && CHURN_FLUSH_MS=10 traced "$WORK/$how.zst" "$WORK/$how.out" "$WORK/closeall" "$how")
    grep -q "files intact" "$WORK/$how.out" || fail "closeall $how printed no verdict"
    if grep -q '^libchurn:' "$WORK/$how.out.err"; then
        fail "closeall $how: $(grep '^libchurn:' "$WORK/$how.out.err" | head -n 1)"
    fi
    analyze "$WORK/$how.zst" "$WORK/$how.json"
    check "$WORK/$how.json" "$WORK/$how.out" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
n = int(open(sys.argv[2]).read().split()[0])
allocs = sum(g["allocs"] for g in growth_with(report, "main"))
if allocs < n:
    fail("%d allocations of main in the trace, the program made %d" % (allocs, n))
expect("metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
PY
done
echo "close loop, close_range and closefrom: the program's files intact and numbered as native, the trace whole"
