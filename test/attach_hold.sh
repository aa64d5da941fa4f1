# Shared steps of the tests that attach to a running program (t_churn_attach, t_attach_sample,
# t_attach_nonpie),
# sourced after test/lib.sh.  CHURN is build/churn.

# start NAME PROGRAM [ARGS...]: PROGRAM started with stdin from a fifo held open on descriptor
# 3 (closing 3 ends its input) and its pid read from its first line: PROG (the job) and PID.
start() {
    name=$1
    shift
    rm -f "$WORK/$name.in"
    mkfifo "$WORK/$name.in"
    "$@" <"$WORK/$name.in" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    PROG=$!
    exec 3>"$WORK/$name.in"
    n=0
    while [ ! -s "$WORK/$name.out" ]; do
        n=$((n + 1))
        [ "$n" -lt 200 ] || fail "$name did not start: $(cat "$WORK/$name.err")"
        sleep 0.05
    done
    PID=$(head -n 1 "$WORK/$name.out")
}

# finish: ends the input of the program start began, waits; STATUS is its exit status.
finish() {
    exec 3>&-
    STATUS=0
    wait "$PROG" || STATUS=$?
}

# For test/programs/attach_busy.c's `hold` mode, started as `start hold ...`: it allocates and
# frees only on command ("ok" after each), so each trace holds exactly what the commands
# between its attach and detach did.
oks=0
tell() { # tell LINE: sent, and its "ok" waited for; USR1: the signal, waited until delivered
    if [ "$1" = USR1 ]; then
        kill -USR1 "$PID"
        tries=0
        while [ $(( (0x$(awk '/^ShdPnd:/ {print $2}' "/proc/$PID/status") >> 9) & 1 )) -eq 1 ]; do
            tries=$((tries + 1))
            [ "$tries" -lt 600 ] || fail "SIGUSR1 was not delivered to attach_busy hold in 30 s"
            sleep 0.05
        done
        return
    fi
    echo "$1" >&3
    oks=$((oks + 1))
    n=0
    while [ "$(grep -c '^ok$' "$WORK/hold.out")" -lt "$oks" ]; do
        n=$((n + 1))
        [ "$n" -lt 600 ] || fail "attach_busy hold did not answer \"$1\""
        sleep 0.05
    done
}

held() { # held NAME [ATTACH OPTIONS...] -- COMMANDS...: one trace around the commands, analyzed
    hname=$1
    shift
    hopts=
    while [ "$1" != -- ]; do
        hopts="$hopts $1"
        shift
    done
    shift
    # shellcheck disable=SC2086
    timeout 60 "$CHURN" attach -o "$WORK/$hname.zst" $hopts "$PID" 2>"$WORK/$hname.attach" ||
        fail "$hname: attach: $(tail -n 1 "$WORK/$hname.attach")"
    for c in "$@"; do
        tell "$c"
    done
    timeout 60 "$CHURN" detach "$PID" 2>"$WORK/$hname.detach" ||
        fail "$hname: detach: $(tail -n 1 "$WORK/$hname.detach")"
    analyze "$WORK/$hname.zst" "$WORK/$hname.json"
    "$ANALYZE" "$WORK/$hname.zst" >"$WORK/$hname.txt" 2>&1 || fail "$hname: churn-analyze failed"
}

# python_loop TURNS: $WORK/loop.py, a program that prints its pid, hashes what TURNS turns of
# building dicts and strings made, goes on turning unhashed until its stdin ends (a thread
# waits for it), then prints the hash: whatever an attach or a detach changed shows there.
python_loop() {
    cat >"$WORK/loop.py" <<EOF
import hashlib, os, sys, threading
print(os.getpid(), flush=True)
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
h = hashlib.sha256()
turn = 0
while turn < $1 or not done.is_set():
    objs = {i: ("x" * (i % 300), [i] * (i % 17)) for i in range(200)}
    text = "".join(v[0][:3] for v in objs.values())
    if turn < $1:
        h.update(text.encode())
    turn += 1
print(h.hexdigest())
EOF
}
