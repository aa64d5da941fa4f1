#!/bin/sh
# Threads that exit (one returns, one calls pthread_exit) while their events may still be
# buffered (test/programs/thread_exit.c): all of those events must reach the trace.
. test/lib.sh

build_c thread_exit test/programs/thread_exit.c -pthread
traced "$WORK/trace.zst" "$WORK/out" "$WORK/thread_exit"
analyze "$WORK/trace.zst" "$WORK/report.json"

check "$WORK/report.json" "$WORK/out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
allocs, frees, alloc_bytes, free_bytes = [
    int(w) for w in open(sys.argv[2]).read().split("expect ")[1].split()]
expect_epoch(report, ph["work"], "threads working before they exit", allocs=allocs,
             frees=frees, alloc_bytes=alloc_bytes, free_bytes=free_bytes)
expect("live (count, bytes) change in the work epoch", live_delta(report, ph["work"], "work"),
       (allocs - frees, alloc_bytes - free_bytes))
for function, made, kept in (("returning_alloc", 37, 7), ("exiting_alloc", 23, 3)):
    entries = growth_with(report, function)
    if not entries:
        fail("no growth entry for %s" % function)
    expect("%s (allocs, live_count)" % function,
           (sum(g["allocs"] for g in entries), sum(g["live_count"] for g in entries)),
           (made, kept))
print("events of both exiting threads present")
PY

# The writer thread must never keep a process alive (test/programs/thread_end.c).  main leaving
# with pthread_exit(): glibc ends the process with exit(0) when its last thread returns, atexit
# handlers and all; and a program that leaves by the raw exit system call (seccomp-strict) ends
# with its own status.  Each run is bounded: outliving the bound is a hang.
build_c thread_end test/programs/thread_end.c -pthread
for mode in pthread_exit sys_exit; do
    case $mode in
    pthread_exit) want=0 how=normal allocs=42 frees=42 ;;
    sys_exit) want=5 how=threads allocs=21 frees=0 ;;
    esac
    rm -f "$WORK/$mode.zst"
    status=0
    timeout -k 2 10 env CHURN_OUT="$WORK/$mode.zst" LD_PRELOAD="$SHIM" "$WORK/thread_end" $mode \
        >"$WORK/$mode.out" 2>"$WORK/$mode.err" || status=$?
    [ "$status" -ne 124 ] && [ "$status" -ne 137 ] ||
        fail "thread_end $mode never ended under the shim (killed after 10 s)"
    [ "$status" -eq "$want" ] || fail "thread_end $mode exited with status $status, not $want"
    if [ $mode = pthread_exit ]; then
        [ "$(cat "$WORK/$mode.out")" = "$(printf 'main leaves\natexit ran')" ] ||
            fail "thread_end pthread_exit printed '$(cat "$WORK/$mode.out")', not what exit(0) flushes natively"
    fi
    analyze "$WORK/$mode.zst" "$WORK/$mode.json"
    check "$WORK/$mode.json" $mode $how $want $allocs $frees <<'PY'
import sys
from churncheck import *
report, mode, how, status, allocs, frees = load(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
expect("%s: metadata.exit" % mode, field(report, "metadata", "exit"), {"how": how, "detail": status})
blocks = [g for g in field(report, "growth") if g["stack"] and any("main" in f or "second_half" in f for f in g["stack"][:2])]
expect("%s: 300-byte blocks of main and its thread (allocs, frees)" % mode,
       (sum(g["allocs"] for g in blocks), sum(g["frees"] for g in blocks)), (allocs, frees))
print("%s: ended with status %d as natively, trace ends %s" % (mode, status, how))
PY
done
