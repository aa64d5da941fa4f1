#!/bin/sh
# A program that runs out of memory (test/programs/oom.c under `ulimit -v 256 MiB`): its
# mallocs return NULL thousands of times, and while it has no address space left it
# allocates from 32,768 new call stacks and from a thread whose ring libchurn cannot map.
# The program must finish with its own checks passing (libchurn neither crashes nor hangs
# when the real allocator fails or when its own tables cannot grow), and the trace must be
# readable, end with the normal exit, hold the epochs before and after exactly, and account
# for every allocation of the exhausted epoch as either an event or a dropped one.
. test/lib.sh

build_c oom test/programs/oom.c -pthread
rm -f "$WORK/trace.zst"
status=0
(ulimit -v 262144 && timeout 120 env CHURN_OUT="$WORK/trace.zst" LD_PRELOAD="$SHIM" "$WORK/oom") \
    >"$WORK/out" 2>"$WORK/err" || status=$?
[ "$status" -eq 0 ] || fail "oom exited with status $status under the shim: $(tail -n 1 "$WORK/err")"
[ -s "$WORK/trace.zst" ] || fail "the out-of-memory run left no trace"
analyze "$WORK/trace.zst" "$WORK/report.json"
check "$WORK/report.json" "$WORK/out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
words = open(sys.argv[2]).read().split("blocks ")[1].split()
blocks, nulls, paths, thread_paths = int(words[0]), int(words[2]), int(words[4]), int(words[5])
if nulls < 5000 or not paths or not thread_paths:
    fail("the program did not run out of memory as intended: %s" % words)
expect_epoch(report, ph["work"], "work before memory ran out", allocs=64, frees=0,
             alloc_bytes=64 * 1000)
expect_epoch(report, ph["after"], "frees after memory came back", frees=64 + 10,
             free_bytes=64 * 1000 + 10 * 100)
expect("metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
made = blocks + paths + thread_paths
traced = epoch(report, ph["exhaust"])["allocs"]
dropped = field(report, "totals", "dropped_events")
if traced + dropped < made:
    fail("exhausted epoch: %d allocations traced + %d events dropped < %d made" %
         (traced, dropped, made))
if dropped and not any("dropped" in w for w in field(report, "warnings")):
    fail("%d events dropped but no warning says so" % dropped)
print("out of memory: %d NULLs survived, %d of %d allocations traced, %d events reported dropped"
      % (nulls, traced, made, dropped))
PY
