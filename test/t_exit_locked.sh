#!/bin/sh
# A process that ends while a thread is inside malloc or free, holding glibc's arena lock
# (test/programs/exit_locked.c): the shim's final flush must take no lock the program can
# hold.  Each run is bounded; a run that outlives its bound is a hang and fails the test.
#   - SIGTERM sent to a process allocating on three threads, 30 runs: status 143, trace ends
#     by signal 15;
#   - _exit(9) from a SIGALRM handler at a random instant, 60 runs: status 9, trace ends _exit 9;
#   - raise(SIGTERM) from that handler, 60 runs: status 143, trace ends by signal 15;
#   - a double free glibc detects (it aborts with the arena lock held), 10 runs: status 134,
#     trace ends by signal 6, and its last epoch's allocator counters are marked stale (the
#     flush did not ask the allocator).
# Every trace must be readable, whole (no damaged segment) and say how the process ended.
. test/lib.sh

build_c exit_locked test/programs/exit_locked.c -pthread

# run NAME MODE: the program under the shim, at most 10 s, its status in $status.
run() {
    rm -f "$WORK/$1.zst"
    status=0
    timeout -k 2 10 env CHURN_OUT="$WORK/$1.zst" LD_PRELOAD="$SHIM" "$WORK/exit_locked" "$2" \
        >"$WORK/$1.out" 2>"$WORK/$1.err" || status=$?
    [ "$status" -ne 124 ] && [ "$status" -ne 137 ] ||
        fail "exit_locked $2 (run $1) hung under the shim (killed after 10 s)"
}

expect_status() {
    [ "$status" -eq "$2" ] || fail "exit_locked run $1 exited with status $status, not $2: $(tail -n 1 "$WORK/$1.err")"
    analyze "$WORK/$1.zst" "$WORK/$1.json"
    echo "$1 $3 $4" >>"$WORK/expected"
}

: >"$WORK/expected"
i=0
while [ $i -lt 30 ]; do
    i=$((i + 1))
    rm -f "$WORK/term$i.zst"
    env CHURN_OUT="$WORK/term$i.zst" LD_PRELOAD="$SHIM" "$WORK/exit_locked" busy \
        >"$WORK/term$i.out" 2>"$WORK/term$i.err" &
    pid=$!
    tries=0
    until grep -q ready "$WORK/term$i.out" 2>/dev/null; do
        tries=$((tries + 1))
        [ $tries -lt 200 ] || { kill -9 $pid; fail "exit_locked busy never got going"; }
        sleep 0.05
    done
    kill -TERM $pid
    tries=0
    while kill -0 $pid 2>/dev/null; do
        tries=$((tries + 1))
        if [ $tries -ge 100 ]; then
            kill -9 $pid
            wait $pid 2>/dev/null || true
            fail "exit_locked busy hung after SIGTERM (run $i, killed after 10 s)"
        fi
        sleep 0.1
    done
    status=0
    wait $pid || status=$?
    expect_status "term$i" 143 signal 15
done

i=0
while [ $i -lt 60 ]; do
    i=$((i + 1))
    run "alarm_exit$i" alarm_exit
    expect_status "alarm_exit$i" 9 _exit 9
    run "alarm_term$i" alarm_term
    expect_status "alarm_term$i" 143 signal 15
done

i=0
while [ $i -lt 10 ]; do
    i=$((i + 1))
    run "double_free$i" double_free
    expect_status "double_free$i" 134 signal 6
done

check "$WORK" "$WORK/expected" <<'PY'
import os, sys
from churncheck import *
work = sys.argv[1]
runs = 0
for line in open(sys.argv[2]):
    name, how, detail = line.split()
    report = load(os.path.join(work, name + ".json"))
    expect("%s: metadata.exit" % name, field(report, "metadata", "exit"),
           {"how": how, "detail": int(detail)})
    expect("%s: damaged segments" % name, field(report, "metadata", "segments_damaged"), 0)
    if not name.startswith("double_free") and field(report, "totals", "allocs") < 64:
        fail("%s: the trace holds %d allocations, not the 64 made first"
             % (name, field(report, "totals", "allocs")))
    if name.startswith("double_free"):
        last = field(report, "epochs")[-1]
        expect("%s: last epoch's counters_stale" % name, last["counters_stale"], True)
    runs += 1
print("%d runs ended as natively, each trace whole and saying how" % runs)
PY
