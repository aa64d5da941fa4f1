#!/bin/sh
# Progress goes to stderr whenever stderr is a terminal, whatever stdout is, and names its
# pass.  churn-analyze runs with stderr on a pseudo-terminal (python3's pty) and stdout in a
# file, reading the trace from a pipe that a feeder holds for a second first: the run then
# takes more than the moment progress waits for, on any machine, and each pass's last line
# ("reading segments 5/5") is on the terminal.  The report in the file is the same as
# without a terminal, and with stderr not a terminal nothing is said.
. test/lib.sh

build_c many_stacks test/programs/many_stacks.c
CHURN_SEGMENT_KB=16 traced "$WORK/t.zst" "$WORK/t.out" "$WORK/many_stacks" 20000 8
nseg=$(python3 -c "import sys; sys.path.insert(0, 'test'); import churncheck
print(len(churncheck.segment_headers(sys.argv[1])))" "$WORK/t.zst")
[ "$nseg" -ge 3 ] || fail "the trace has $nseg segments, want 3 or more"

# on_tty NAME OPTION...: churn-analyze OPTION... - < trace (held back 1 s), stdout into
# NAME.out, stderr on a terminal into NAME.tty
on_tty() {
    name=$1
    shift
    python3 - "$WORK/t.zst" "$WORK/$name.out" "$WORK/$name.tty" "$ANALYZE" "$@" <<'PY' ||
import os, pty, subprocess, sys, time
trace, out_path, tty_path, *cmd = sys.argv[1:]
master, slave = pty.openpty()
with open(out_path, "wb") as out:
    p = subprocess.Popen(cmd + ["-"], stdin=subprocess.PIPE, stdout=out, stderr=slave)
os.close(slave)
time.sleep(1.0)
p.stdin.write(open(trace, "rb").read())
p.stdin.close()
said = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # EIO: every copy of the terminal's other side is closed
        break
    if not chunk:
        break
    said += chunk
open(tty_path, "wb").write(said)
sys.exit(p.wait())
PY
        fail "churn-analyze $* - with stderr on a terminal failed: $(tail -c 300 "$WORK/$name.tty")"
    "$ANALYZE" "$@" - <"$WORK/t.zst" >"$WORK/$name.plain" 2>"$WORK/$name.err" ||
        fail "churn-analyze $* failed: $(tail -n 1 "$WORK/$name.err")"
    cmp -s "$WORK/$name.out" "$WORK/$name.plain" ||
        fail "churn-analyze $*: the report differs with stderr on a terminal"
    [ ! -s "$WORK/$name.err" ] || fail "churn-analyze $*: stderr not a terminal, yet: $(head -c 200 "$WORK/$name.err")"
}

# said NAME PATTERN: the terminal showed a line matching PATTERN
said() {
    tr '\r' '\n' <"$WORK/$1.tty" | grep -q "$2" ||
        fail "$1: no '$2' on the terminal; it showed: $(tr '\r' '\n' <"$WORK/$1.tty" | tail -n 5)"
}

on_tty text
said text "^churn-analyze: reading segments $nseg/$nseg"
on_tty json --json
said json "^churn-analyze: reading segments $nseg/$nseg"
on_tty folded --folded
said folded "^churn-analyze: reading segments $nseg/$nseg"
said folded "^churn-analyze: symbolizing stacks 20[0-9][0-9][0-9]/20[0-9][0-9][0-9]"
# the terminal is left clean for what follows: the last thing written erases the line
[ "$(tail -c 4 "$WORK/text.tty" | od -An -c | tr -d ' \n')" = '\r033[K' ] ||
    fail "the progress line is not erased at the end: $(tail -c 40 "$WORK/text.tty" | od -An -c)"
echo "progress on a terminal with stdout in a file: $nseg segments read, 20000+ stacks symbolized, named; reports unchanged"
