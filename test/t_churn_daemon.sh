#!/bin/sh
# `churn run` of a program that daemonizes: churn returns when the process it started ends,
# as the shell would, and says which processes of the tree still run, each with the trace it
# goes on writing, the command that analyzes what it traced so far and how to end it; the
# table of the tree lists them as running, never as killed.  A double-forking daemon of our
# own (test/programs/churn_tree.c daemon: its trace holds its 37 blocks and, once it is
# killed, its end), a child left running by a parent that exits at once, on one CPU (where
# the child often has not run, nor written its line in the index, when its parent ends), and
# redis-server --daemonize yes (its trace ends with its shutdown).
. test/lib.sh

CHURN=$ROOT/build/churn
[ -x "$CHURN" ] || fail "build/churn is missing: run make"
build_c churn_tree test/programs/churn_tree.c

# gone PID: waits (60 s at most) until PID no longer runs
gone() {
    n=0
    while kill -0 "$1" 2>/dev/null && [ "$(sed -n 's/^State:\t\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null)" != Z ]; do
        n=$((n + 1))
        [ "$n" -lt 1200 ] || fail "pid $1 did not end"
        sleep 0.05
    done
}

# said NAME DAEMON TRACE: churn's stderr NAME.err names DAEMON as still running, traced into
# TRACE, with the commands that follow it, and lists it as running
said() {
    e=$WORK/$1.err
    grep -q "^churn: pid [0-9]* that churn started has ended, and 1 process of its tree still runs (it daemonized, or was left running); it is traced until it ends:$" "$e" ||
        { cat "$e"; fail "$1: churn did not say that a process still runs"; }
    grep -q "^churn:   pid $2 (.*), traced into $3$" "$e" ||
        { cat "$e"; fail "$1: churn did not name pid $2 and its trace $3"; }
    grep -q "^churn: analyze what it traced so far with: .*churn analyze $3; its trace is complete once it ends (kill $2)$" "$e" ||
        { cat "$e"; fail "$1: churn did not say how to follow pid $2"; }
    grep -q "^churn:   $2 .* running " "$e" || { cat "$e"; fail "$1: pid $2 is not listed as running"; }
    ! grep -q "killed" "$e" || { cat "$e"; fail "$1: churn calls a process killed"; }
}

# ---- a daemon of our own ----
status=0
timeout 60 "$CHURN" run -o "$WORK/d.zst" "$WORK/churn_tree" daemon </dev/null >"$WORK/d.out" \
    2>"$WORK/d.err" || status=$?
[ "$status" -eq 0 ] || { cat "$WORK/d.err"; fail "churn run churn_tree daemon: status $status"; }
daemon=$(sed -n 's/^daemon //p' "$WORK/d.out")
[ -n "$daemon" ] && kill -0 "$daemon" || fail "the daemon does not run"
said d "$daemon" "$WORK/d.$daemon.zst"
kill -TERM "$daemon"
gone "$daemon"
analyze "$WORK/d.$daemon.zst" "$WORK/d.json"
check "$WORK/d.json" <<'PY'
import sys
from churncheck import *
r = load(sys.argv[1])
expect("the daemon's leak", sum(g["live_count"] for g in growth_with(r, "leaf_alloc")), 37)
expect("the daemon's end", field(r, "metadata", "exit"), {"how": "signal", "detail": 15})
PY
echo "churn_tree daemon: named as running with its trace, which ends with its death"

# ---- a child left running by a parent that exits at once, all on one CPU: the child may not
# have run, nor written its line in the index, when churn sees the parent end ----
late=0
for i in 1 2 3 4 5; do
    status=0
    timeout 60 taskset -c 0 "$CHURN" run -o "$WORK/l$i.zst" "$WORK/churn_tree" leave </dev/null \
        >"$WORK/l$i.out" 2>"$WORK/l$i.err" || status=$?
    [ "$status" -eq 0 ] || { cat "$WORK/l$i.err"; fail "churn run churn_tree leave: status $status"; }
    left=$(sed -n 's/^child //p' "$WORK/l$i.out")
    [ -n "$left" ] && kill -0 "$left" || fail "the child left running does not run"
    said "l$i" "$left" "$WORK/l$i.$left.zst"
    # its start line after its parent's end: it had not run when the parent ended
    awk '$1 == "end" {e = 1} $1 == "start" && e {l = 1} END {exit !l}' "$WORK/l$i.index" &&
        late=$((late + 1))
    kill -TERM "$left"
    gone "$left"
done
echo "churn_tree leave: the child named as running in 5 runs of 5 ($late of them with its line written after its parent's end)"

# ---- ten children left running: eight named, the rest counted ----
trap 'kill $(sed -n "s/^child //p" "$WORK/ten.out") 2>/dev/null' EXIT # should the test fail
status=0
timeout 60 "$CHURN" run -o "$WORK/ten.zst" "$WORK/churn_tree" leave 10 </dev/null \
    >"$WORK/ten.out" 2>"$WORK/ten.err" || status=$?
[ "$status" -eq 0 ] || { cat "$WORK/ten.err"; fail "churn run churn_tree leave 10: status $status"; }
grep -q "^churn: pid [0-9]* that churn started has ended, and 10 processes of its tree still run (they daemonized, or were left running); each is traced until it ends:$" "$WORK/ten.err" ||
    { cat "$WORK/ten.err"; fail "churn did not say that ten processes still run"; }
[ "$(grep -c "^churn:   pid [0-9]* (.*churn_tree leave.*), traced into $WORK/ten\.[0-9]*\.zst$" "$WORK/ten.err")" -eq 8 ] ||
    { cat "$WORK/ten.err"; fail "churn did not name eight of the ten children with their traces"; }
grep -q "^churn:   \.\.\. and 2 more: .*churn analyze --list $WORK/ten.zst$" "$WORK/ten.err" ||
    { cat "$WORK/ten.err"; fail "churn did not count the two children it did not name"; }
for p in $(sed -n 's/^child //p' "$WORK/ten.out"); do
    kill "$p"
    gone "$p"
done
trap - EXIT
echo "ten children left running: eight named, two counted"

# ---- redis-server --daemonize yes ----
command -v redis-server >/dev/null || fail "redis-server is missing (Debian redis-server)"
status=0
timeout 60 "$CHURN" run -o "$WORK/r.zst" redis-server --port $port --daemonize yes --save '' \
    --appendonly no --dir "$WORK" --pidfile "$WORK/redis.pid" --logfile "$WORK/redis.log" \
    </dev/null >"$WORK/r.out" 2>"$WORK/r.err" || status=$?
[ "$status" -eq 0 ] || { cat "$WORK/r.err"; fail "churn run redis-server --daemonize yes: status $status"; }
n=0
until [ -s "$WORK/redis.pid" ] && redis-cli -p $port ping >/dev/null 2>&1; do
    n=$((n + 1))
    [ $n -lt 300 ] || fail "the daemonized redis-server does not answer: $(tail -n 1 "$WORK/redis.log")"
    sleep 0.1
done
rpid=$(cat "$WORK/redis.pid")
said r "$rpid" "$WORK/r.$rpid.zst"
redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true
gone "$rpid"
analyze "$WORK/r.$rpid.zst" "$WORK/r.json"
check "$WORK/r.json" <<'PY'
import sys
from churncheck import *
r = load(sys.argv[1])
expect("the daemonized redis-server's end", field(r, "metadata", "exit"), {"how": "normal", "detail": 0})
if field(r, "totals", "allocs") == 0:
    fail("nothing traced in the daemonized redis-server")
PY
echo "redis-server --daemonize yes: named as running with its trace, which ends with its shutdown"
