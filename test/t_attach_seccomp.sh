#!/bin/sh
# churn attach to a process under a seccomp filter (test/programs/seccomp_install.c, waiting
# on its stdin once the filter is in place).  A filter that kills on a system call libchurn
# makes, and one that fails it with EPERM: attach is refused in one line with status 1, and the
# process goes on and ends as natively.  A filter that stops nothing libchurn needs: attach and
# detach work, and the trace ends with the detach.
. test/lib.sh

CHURN=$ROOT/build/churn
[ -x "$CHURN" ] || fail "build/churn is missing: run make"
build_c seccomp_install test/programs/seccomp_install.c

# start MODE: the program under MODE's filter, waiting on the fifo $WORK/MODE.in; PID its pid
start() {
    rm -f "$WORK/$1.in"
    mkfifo "$WORK/$1.in"
    "$WORK/seccomp_install" "$1" wait <"$WORK/$1.in" >"$WORK/$1.out" 2>"$WORK/$1.err" &
    PID=$!
    exec 9>"$WORK/$1.in"
    n=0
    until grep -q '^before' "$WORK/$1.out" 2>/dev/null; do
        n=$((n + 1))
        [ $n -lt 300 ] || fail "$1: the program did not install its filter: $(cat "$WORK/$1.err")"
        sleep 0.1
    done
}

# finish MODE: let it go on; it must end with status 0 and its last line
finish() {
    printf x >&9
    exec 9>&-
    status=0
    wait "$PID" || status=$?
    [ "$status" -eq 0 ] || fail "$1: the program ended with status $status after the attach"
    grep -q '^after 100000$' "$WORK/$1.out" || fail "$1: the program did not finish its work"
}

start errno-late
status=0
timeout 60 "$CHURN" attach -o "$WORK/errno.zst" "$PID" 2>"$WORK/errno.attach" || status=$?
[ "$status" -eq 1 ] || fail "EPERM filter: attach status $status: $(cat "$WORK/errno.attach")"
finish errno-late

# the same filter, killing: seccomp_install's kill-first installs it before any allocation
start kill-first
status=0
timeout 60 "$CHURN" attach -o "$WORK/kill.zst" "$PID" 2>"$WORK/kill.attach" || status=$?
[ "$status" -eq 1 ] || fail "KILL filter: attach status $status: $(cat "$WORK/kill.attach")"
[ "$(wc -l <"$WORK/kill.attach")" -eq 1 ] || fail "KILL filter: not one line: $(cat "$WORK/kill.attach")"
grep -q "cannot attach to $PID: a seccomp filter in it stops .*, which libchurn needs" \
    "$WORK/kill.attach" || fail "KILL filter: $(cat "$WORK/kill.attach")"
finish kill-first

start blacklist
timeout 60 "$CHURN" attach -o "$WORK/black.zst" "$PID" 2>"$WORK/black.attach" ||
    fail "a filter that stops nothing libchurn needs: attach refused: $(cat "$WORK/black.attach")"
timeout 60 "$CHURN" detach "$PID" 2>"$WORK/black.detach" ||
    fail "a filter that stops nothing libchurn needs: detach failed: $(cat "$WORK/black.detach")"
finish blacklist
analyze "$WORK/black.zst" "$WORK/black.json"
check "$WORK/black.json" <<'PY'
import sys
from churncheck import *
expect("exit record", field(load(sys.argv[1]), "metadata", "exit"), {"how": "detach", "detail": 0})
print("attach refused under filters that stop libchurn's calls, the process unharmed; "
      "attach and detach under one that does not")
PY
