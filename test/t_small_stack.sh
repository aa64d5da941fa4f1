#!/bin/sh
# A thread with a PTHREAD_STACK_MIN stack (test/programs/small_stack.c) must start under the
# shim (glibc takes every library's static TLS from that stack) and its allocations must be
# traced with their stacks, walked on that small stack.
. test/lib.sh

build_c small_stack test/programs/small_stack.c -pthread
traced "$WORK/trace.zst" "$WORK/out" "$WORK/small_stack"
analyze "$WORK/trace.zst" "$WORK/report.json"

check "$WORK/report.json" "$WORK/out" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
kept = int(open(sys.argv[2]).read().split("kept ")[1].split()[0])
entries = growth_with(report, "small_stack_alloc")
if not entries:
    fail("no growth entry names small_stack_alloc")
expect("small_stack_alloc (allocs, live_count)",
       (sum(g["allocs"] for g in entries), sum(g["live_count"] for g in entries)), (kept, kept))
print("a thread on a PTHREAD_STACK_MIN stack started and was traced")
PY
