#!/bin/sh
# A thread with a PTHREAD_STACK_MIN stack (test/programs/small_stack.c) must start under the
# shim (glibc takes every library's static TLS from that stack) and its allocations must be
# traced with their stacks, walked on that small stack.
# Then signal handlers that allocate on an 8 KiB (the classic SIGSTKSZ) and a 12 KiB
# sigaltstack, 5,000 signals each, and on 8 KiB sigaltstacks of four threads in turn whose
# first allocation is the handler's (test/programs/sigaltstack_alloc.c): the program runs to
# its end as natively, every allocation is traced, those in the handlers with their stacks cut
# to the allocating function (no room to walk the signal frame) and counted exactly in the
# trace, and libchurn's own stack use there is printed and bounded.  Last, the worst case of
# the shim's walks on a thread's stack, through signal frames, is measured and printed.
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
expect("short stacks on a PTHREAD_STACK_MIN thread", field(report, "totals", "short_stacks"), 0)
print("a thread on a PTHREAD_STACK_MIN stack started and was traced")
PY

build_c sigaltstack_alloc test/programs/sigaltstack_alloc.c -pthread
signals=5000
for run in 8192 12288 8192:threads; do
    bytes=${run%%:*}
    how=$(echo "$run" | sed -n 's/^[0-9]*://p')
    "$WORK/sigaltstack_alloc" $bytes $signals $how >"$WORK/native.$run" 2>&1 ||
        fail "sigaltstack_alloc $bytes $how fails natively: $(tail -n 1 "$WORK/native.$run")"
    traced "$WORK/alt.$run.zst" "$WORK/alt.$run" "$WORK/sigaltstack_alloc" $bytes $signals $how
    analyze "$WORK/alt.$run.zst" "$WORK/alt.$run.json"
    check "$WORK/alt.$run.json" "$WORK/alt.$run" "$WORK/native.$run" $bytes $signals "$how" \
        "$WORK/alt.$run.zst" <<'PY'
import sys
from churncheck import *
report, bytes, signals, how = load(sys.argv[1]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
# the trace's own SHORT_STACKS records, read without the analyzer: the last running total
totals = [r["short_stacks"] for r in records(sys.argv[7]) if r["tag"] == 0x0D]
expect("the last SHORT_STACKS record of the trace", totals[-1] if totals else None, 4 * signals)
used = lambda path: int(open(path).read().split("altstack used ")[1].split()[0])
traced_used, native_used = used(sys.argv[2]), used(sys.argv[3])
expect("blocks kept by the handlers", int(open(sys.argv[2]).read().split("kept ")[1]), signals)
# four mallocs a handler, each cut to one frame; nothing else is short
expect("stacks cut short (the handlers' allocations)", field(report, "totals", "short_stacks"),
       4 * signals)
entries = growth_with(report, "handler_alloc")
live = [g for g in entries if g.get("live_count") == signals and g.get("live_bytes") == 777 * signals]
if not live:
    fail("no growth entry of handler_alloc with its %d blocks of 777 bytes: %s" % (signals, entries))
if len(live[0]["stack"]) != 1:
    fail("the handlers' short stack has %d frames, not one: %s" % (len(live[0]["stack"]), live[0]["stack"]))
if not any("cut short" in w for w in field(report, "warnings")):
    fail("no analyzer warning about the stacks cut short: %s" % report["warnings"])
extra = traced_used - native_used
if extra > 1024:
    fail("libchurn took %d bytes of the %d-byte sigaltstack beyond the handler's own %d" % (extra, bytes, native_used))
print("%d-byte sigaltstack%s, %d signals: every allocation traced, %d stacks cut short; the handler "
      "takes %d bytes natively, %d traced (+%d)" % (bytes, " of 4 threads" if how else "", signals,
                                                   4 * signals, native_used, traced_used, extra))
PY
done

# The walks' worst case on a thread's own stack, through signal frames, caches cold.
"$WORK/sigaltstack_alloc" thread 200 >"$WORK/thread.native" 2>&1 || fail "sigaltstack_alloc thread fails natively"
traced "$WORK/thread.zst" "$WORK/thread.out" "$WORK/sigaltstack_alloc" thread 200
check "$WORK/thread.out" "$WORK/thread.native" <<'PY'
import sys
from churncheck import *
used = lambda path: int(open(path).read().split("thread stack used ")[1].split()[0])
extra = used(sys.argv[1]) - used(sys.argv[2])
# unwind.c leaves 16 KiB for the walk that takes most: its worst case must stay well inside
if extra > 12 << 10:
    fail("the shim's walks took %d bytes of a thread's stack beyond the program's own" % extra)
print("walks on a thread's stack through signal frames: +%d bytes of stack at the worst" % extra)
PY
