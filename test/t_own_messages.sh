#!/bin/sh
# libchurn's own lines go only to the stderr the program had at start-up, and never kill it.
# 1. stderr is a pipe whose reader is gone: libchurn's start-up line (a bad CHURN_ZSTD_LEVEL,
#    refused in one line) must not raise SIGPIPE; the program runs to its end.
# 2. The program closes 0..2 and opens its data file as 2 (test/programs/stderr_swap.c), then
#    fills the trace's disk (a 256 KiB tmpfs): libchurn's full-disk line must not land in the
#    data file, which holds exactly the program's two lines, and the trace stays readable.
. test/lib.sh

cat >"$WORK/tiny.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
    for (int i = 0; i < 100; i++)
        free(malloc(32 + i));
    puts("ran");
    return 0;
}
C
build_c tiny "$WORK/tiny.c"
check "$WORK/tiny" "$SHIM" "$WORK/pipe.zst" <<'PY'
import os, signal, subprocess, sys
from churncheck import *
prog, shim, trace = sys.argv[1:4]
r, w = os.pipe()
os.close(r)
env = dict(os.environ, LD_PRELOAD=shim, CHURN_OUT=trace, CHURN_ZSTD_LEVEL="99")
# restore_signals (the default) gives the program SIGPIPE's default action, as a shell would.
p = subprocess.run([prog], stdout=subprocess.PIPE, stderr=w, env=env)
os.close(w)
if p.returncode < 0:
    fail("the program died of %s with stderr a closed pipe" % signal.Signals(-p.returncode).name)
expect("exit status with stderr a closed pipe", p.returncode, 0)
expect("the program's output", p.stdout, b"ran\n")
# the same run with a reader: the line is there to be written
p = subprocess.run([prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
if b"libchurn: bad value CHURN_ZSTD_LEVEL=99" not in p.stderr:
    fail("no start-up line to write: the test does not test a closed stderr (%r)" % p.stderr)
print("stderr a closed pipe: libchurn's line raised no SIGPIPE, the program ran")
PY

[ "$(id -u)" = 0 ] || fail "needs root to mount a size-limited tmpfs"
build_c stderr_swap test/programs/stderr_swap.c
mkdir -p "$WORK/full"
cleanup() { umount "$WORK/full" 2>/dev/null || true; }
trap cleanup EXIT INT TERM
mount -t tmpfs -o size=256k tmpfs "$WORK/full" || fail "cannot mount a 256 KiB tmpfs"
status=0
CHURN_OUT="$WORK/full/trace.zst" CHURN_SEGMENT_KB=64 LD_PRELOAD="$SHIM" \
    "$WORK/stderr_swap" "$WORK/data" 400000 >"$WORK/swap.out" 2>"$WORK/swap.err" || status=$?
[ "$status" -eq 0 ] || fail "stderr_swap exited with status $status"
[ -s "$WORK/swap.err" ] && fail "the start-up stderr got lines after the program closed it: $(cat "$WORK/swap.err")"
printf 'data begins\ndata ends\n' | cmp -s - "$WORK/data" ||
    fail "the program's data file (its fd 2) holds more than its two lines: $(cat "$WORK/data")"
avail=$(df -k --output=avail "$WORK/full" | tail -n 1)
[ "$avail" -lt 64 ] || fail "the tmpfs never filled up ($avail KiB free): the test did not test the full disk"
cp "$WORK/full/trace.zst" "$WORK/trace.zst"
analyze "$WORK/trace.zst" "$WORK/trace.json"
echo "data file as fd 2: libchurn's full-disk line stayed out of it, the trace is readable"
