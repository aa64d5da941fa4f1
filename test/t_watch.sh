#!/bin/sh
# churn watch.  In a terminal (tmux, read back with capture-pane): the demo workload
# (test/programs/request_loop.c, a 48-byte session leaked by remember_session per request)
# under churn run, watched by its trace; remember_session must be the top function by growth
# within a few seconds of the first view, with its 48 B per epoch, the RSS parts drawn, and
# the last line must say the program exited with status 0.  Without a terminal, one line per
# interval: the same program killed with SIGKILL must end the watch with a line that says it
# is gone without an exit libchurn saw; a program that execs itself
# (test/programs/live_phases.c) is followed into its next image (the index beside its trace
# names it), whose function the lines then name, to its exit; and `churn watch PID` finds the
# trace of a running process by the files it holds open.
. test/lib.sh
command -v tmux >/dev/null || fail "tmux is missing (Debian tmux; make check installs it)"

build_c request_loop test/programs/request_loop.c
build_c live_phases test/programs/live_phases.c
tmux="tmux -L churn-watch-$$"
trap '$tmux kill-server 2>/dev/null; kill ${run:-} ${kill9:-} ${phases:-} ${bypid:-} 2>/dev/null || true' EXIT

# In a terminal.
"$ROOT/build/churn" run -o "$WORK/t.zst" -- "$WORK/request_loop" 2500 5 >/dev/null 2>"$WORK/run.err" &
run=$!
$tmux -f /dev/null new-session -d -x 160 -y 40 "$ROOT/build/churn watch '$WORK/t.zst'; sleep 600" ||
    fail "tmux cannot start a session"
capture() {
    $tmux capture-pane -p -t 0 >"$WORK/pane.txt" 2>/dev/null || true
}
i=0
until capture && grep -q 'Top functions' "$WORK/pane.txt"; do
    i=$((i + 1))
    [ $i -lt 300 ] || fail "no view in 60 s: $(head -n 3 "$WORK/pane.txt")"
    sleep 0.2
done
first=$i
until capture && grep -A 2 'Top functions' "$WORK/pane.txt" | grep -q '+48B .*remember_session'; do
    i=$((i + 1))
    [ $i -lt $((first + 50)) ] ||
        fail "remember_session is not the top function 10 s after the first view: $(cat "$WORK/pane.txt")"
    sleep 0.2
done
ontop=$(((i - first) / 5))
cp "$WORK/pane.txt" "$WORK/pane.leak.txt"
for part in rss live slack pinned free-res outside 'not traced'; do
    grep -q "^  $part " "$WORK/pane.leak.txt" || fail "the view shows no $part row: $(cat "$WORK/pane.leak.txt")"
done
until capture && grep -q 'ended: exit 0' "$WORK/pane.txt"; do
    i=$((i + 1))
    [ $i -lt 600 ] || fail "no end line 2 minutes on: $(tail -n 3 "$WORK/pane.txt")"
    sleep 0.2
done
wait $run || fail "request_loop under churn run exited with status $?"

# Without a terminal: killed.
"$ROOT/build/churn" run -o "$WORK/k.zst" -- "$WORK/request_loop" 100000 5 >/dev/null 2>"$WORK/k.err" &
kill9=$!
timeout 120 "$ROOT/build/churn" watch "$WORK/k.zst" >"$WORK/k.watch" 2>&1 &
watch=$!
i=0
until [ "$(grep -c ' epoch ' "$WORK/k.watch")" -ge 2 ]; do
    i=$((i + 1))
    [ $i -lt 300 ] || fail "churn watch printed no two lines in 60 s: $(cat "$WORK/k.watch")"
    sleep 0.2
done
pid=$(sed -n 's/^[0-9:]* pid \([0-9]*\) up [0-9.]* s epoch .*/\1/p' "$WORK/k.watch" | head -n 1)
[ -n "$pid" ] || fail "the lines name no pid: $(head -n 2 "$WORK/k.watch")"
kill -KILL "$pid"
wait $watch || fail "churn watch exited with status $? after the kill: $(tail -n 1 "$WORK/k.watch")"
tail -n 1 "$WORK/k.watch" | grep -q "^pid $pid (request_loop) ended: gone without an exit libchurn saw" ||
    fail "the last line after a kill -9: $(tail -n 1 "$WORK/k.watch")"

# Without a terminal: through an exec.
"$ROOT/build/churn" run -o "$WORK/p.zst" -- "$WORK/live_phases" 200 10 >/dev/null 2>"$WORK/p.err" &
phases=$!
timeout 120 "$ROOT/build/churn" watch "$WORK/p.zst" >"$WORK/p.watch" 2>&1 ||
    fail "churn watch of an exec'ing program exited with status $?: $(tail -n 1 "$WORK/p.watch")"
wait $phases || fail "live_phases under churn run exited with status $?"
check "$WORK/p.watch" <<'PY'
import re, sys
from churncheck import *
lines = open(sys.argv[1]).read().split("\n")[:-1]
at = [i for i, l in enumerate(lines) if re.match(r"pid \d+ exec: the next image writes .*p\.\d+\.1\.zst$", l)]
if len(at) != 1:
    fail("no single exec line: %s" % lines)
before = [l for l in lines[:at[0]] if " top " in l]
after = [l for l in lines[at[0] + 1:] if " top " in l]
if not before or not all(" top first_image_keep +64B/epoch" in l for l in before):
    fail("before the exec: %s" % before)
if not after or not all(" top second_image_keep +128B/epoch" in l for l in after):
    fail("after the exec: %s" % after)
if not re.match(r"pid \d+ \(live_phases\) ended: exit 0$", lines[-1]):
    fail("the last line: %r" % lines[-1])
PY

# By pid.
"$WORK/request_loop" 100000 5 >/dev/null 2>&1 &
untraced=$!
kill $untraced
"$ROOT/build/churn" watch $untraced >"$WORK/untraced.out" 2>&1 && fail "churn watch of a pid that is gone succeeded"
CHURN_OUT="$WORK/b.zst" LD_PRELOAD="$SHIM" "$WORK/request_loop" 100000 5 >/dev/null 2>&1 &
bypid=$!
i=0
until [ -s "$WORK/b.zst" ]; do
    i=$((i + 1))
    [ $i -lt 300 ] || fail "the traced program wrote no trace in 60 s"
    sleep 0.2
done
timeout 120 "$ROOT/build/churn" watch --interval 0.5 $bypid >"$WORK/b.watch" 2>&1 &
watch=$!
i=0
until grep -q " top remember_session " "$WORK/b.watch"; do
    i=$((i + 1))
    [ $i -lt 300 ] || fail "churn watch $bypid named no top function in 60 s: $(tail -n 2 "$WORK/b.watch")"
    sleep 0.2
done
kill $bypid
wait $watch || fail "churn watch $bypid exited with status $?"
tail -n 1 "$WORK/b.watch" | grep -q "^pid $bypid (request_loop) ended: signal 15 (TERM)$" ||
    fail "the last line of churn watch PID: $(tail -n 1 "$WORK/b.watch")"
echo "watch: the leak on top $ontop s after the first view; kill -9, exec and pid followed"
