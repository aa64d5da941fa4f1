#!/bin/sh
# 10,000 short-lived threads (test/programs/many_threads.c), each making and freeing 10
# blocks: every event of every thread is in the trace (100,000 allocations and frees from
# thread_work, exactly), although each thread's ring is registered at its start and recycled
# after its death, and the traced process's peak RSS stays bounded (rings are reused, not
# kept per thread).
. test/lib.sh

build_c many_threads test/programs/many_threads.c -pthread
/usr/bin/time -f "%M" -o "$WORK/maxrss" env CHURN_OUT="$WORK/trace.zst" LD_PRELOAD="$SHIM" \
    "$WORK/many_threads" >"$WORK/out" 2>"$WORK/err" || fail "many_threads failed under the shim: $(tail -n 1 "$WORK/err")"
analyze "$WORK/trace.zst" "$WORK/report.json"

check "$WORK/report.json" "$WORK/maxrss" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
maxrss_kb = int(open(sys.argv[2]).read().split()[-1])
work = [g for g in field(report, "growth") if any(f.startswith("thread_work") for f in g["stack"][:2])]
expect("allocations from thread_work", sum(g["allocs"] for g in work), 100000)
expect("frees from thread_work", sum(g["frees"] for g in work), 100000)
expect("unknown frees", field(report, "totals", "unknown_frees"), 0)
expect("dropped events", field(report, "totals", "dropped_events"), 0)
# 10,000 rings of 4096 events would be about 1.9 GB; reused rings keep it small
if maxrss_kb > 200 * 1024:
    fail("peak RSS %d kB for 10,000 sequential threads: rings are not reused" % maxrss_kb)
print("10,000 threads: 100,000 allocations and frees exact, peak RSS %d kB" % maxrss_kb)
PY
