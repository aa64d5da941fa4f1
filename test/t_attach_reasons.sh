#!/bin/sh
# churn attach and detach refuse processes they cannot work on for the true reason, in one
# line with status 1, and leave them to end as they would (test/programs/attach_states.c): a
# process whose main thread has exited while another runs on is not called a zombie (it is
# alive), one suspended in vfork until its child execs or exits is not called gone (nor does
# attach wait for it), and the vfork child that runs on its parent's memory is refused; a
# process that has ended and is not yet reaped is still called a zombie.
. test/lib.sh

CHURN=$ROOT/build/churn
[ -x "$CHURN" ] || fail "build/churn is missing: run make"
build_c attach_states test/programs/attach_states.c -pthread

# refused WHAT PATTERN ARGS...: churn ARGS (killed if it takes more than 30 s) says PATTERN in
# one line with status 1
refused() {
    what=$1 pattern=$2
    shift 2
    status=0
    timeout -k 5 30 "$CHURN" "$@" >"$WORK/refused.out" 2>"$WORK/refused.err" || status=$?
    [ "$status" -eq 1 ] || fail "$what: status $status, expected 1: $(cat "$WORK/refused.err")"
    [ "$(wc -l <"$WORK/refused.err")" -eq 1 ] || fail "$what: not one line: $(cat "$WORK/refused.err")"
    grep -q "$pattern" "$WORK/refused.err" || fail "$what: $(cat "$WORK/refused.err")"
}

# until WHAT CONDITION: waits (30 s at most) until the shell condition holds
until_true() {
    what=$1
    shift
    n=0
    until eval "$*"; do
        n=$((n + 1))
        [ "$n" -lt 600 ] || fail "$what: not within 30 s"
        sleep 0.05
    done
}

state() {
    sed -n 's/^State:\t\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null
}

# ---- the main thread has exited, another thread runs on ----
rm -f "$WORK/leader.in"
mkfifo "$WORK/leader.in"
"$WORK/attach_states" leader <"$WORK/leader.in" >"$WORK/leader.out" 2>"$WORK/leader.err" &
prog=$!
exec 3>"$WORK/leader.in"
until_true "the program's pid" '[ -s "$WORK/leader.out" ]'
pid=$(head -n 1 "$WORK/leader.out")
until_true "the main thread's exit" '[ "$(state "$pid")" = Z ]'
refused "main thread exited" "cannot attach to $pid: its main thread has exited; 1 other thread runs on" \
    attach -o "$WORK/leader.zst" "$pid"
refused "main thread exited (detach)" "cannot detach from $pid: its main thread has exited; 1 other thread runs on" \
    detach "$pid"
[ ! -e "$WORK/leader.zst" ] || fail "a refused attach left a trace"
exec 3>&-
status=0
wait $prog || status=$?
[ "$status" -eq 3 ] || fail "the program whose main thread exited ended with status $status, expected 3"
echo "main thread exited: refused as such, the program ended as it would"

# ---- vfork: the parent suspended, the child on its memory ----
rm -f "$WORK/vfork.in"
mkfifo "$WORK/vfork.in"
"$WORK/attach_states" vfork <"$WORK/vfork.in" >"$WORK/vfork.out" 2>"$WORK/vfork.err" &
prog=$!
exec 3>"$WORK/vfork.in"
until_true "the child's pid" '[ "$(wc -l <"$WORK/vfork.out")" -ge 2 ]'
pid=$(sed -n 1p "$WORK/vfork.out")
child=$(sed -n 2p "$WORK/vfork.out")
until_true "the parent suspended in vfork" '[ "$(state "$pid")" = D ]'
refused "suspended in vfork" "cannot attach to $pid: it is suspended in vfork until its child $child execs or exits" \
    attach -o "$WORK/vfork.zst" "$pid"
refused "the vfork child" "cannot attach to $child: it is a vfork child that has not exec'd: it runs on the memory of its parent $pid" \
    attach -o "$WORK/vchild.zst" "$child"
refused "suspended in vfork (detach)" "cannot detach from $pid: it is suspended in vfork until its child $child execs or exits" \
    detach "$pid"
exec 3>&-
status=0
wait $prog || status=$?
[ "$status" -eq 5 ] || fail "the vforking program ended with status $status, expected 5"
echo "vfork: the parent and the child refused as such, the program ended as it would"

# ---- a process that has ended, not yet reaped: a zombie ----
sh -c 'sleep 0.1 & exec sleep 30' &
holder=$!
child_of() { # the first child of $1 ("" while it has none)
    tr -s ' ' '\n' <"/proc/$1/task/$1/children" 2>/dev/null | head -n 1
}
until_true "the zombie" '[ -n "$(child_of $holder)" ] && [ "$(state "$(child_of $holder)")" = Z ]'
zombie=$(child_of $holder)
refused "a zombie" "cannot attach to $zombie: it has ended (a zombie)" attach "$zombie"
kill $holder
wait $holder 2>/dev/null || true
echo "zombie: refused as such"
