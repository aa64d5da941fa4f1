#!/bin/sh
# libchurn's handler for fatal signals is invisible to the program (test/programs/sighide.c):
# sigaction and signal report the default where the program set nothing (python's
# signal.getsignal(SIGSEGV) said None under the shim, not SIG_DFL), and a program that sets
# the default itself and then aborts still dies of SIGABRT, with the trace flushed.
. test/lib.sh

build_c sighide test/programs/sighide.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/sighide"
grep -q "looked untouched" "$WORK/out" || fail "sighide printed no verdict"

python3 -c 'import signal; print([signal.getsignal(s) for s in (signal.SIGSEGV, signal.SIGABRT)])' >"$WORK/py.native"
env CHURN_OUT="$WORK/py.zst" LD_PRELOAD="$SHIM" python3 -c 'import signal; print([signal.getsignal(s) for s in (signal.SIGSEGV, signal.SIGABRT)])' >"$WORK/py.traced"
cmp -s "$WORK/py.native" "$WORK/py.traced" ||
    fail "python's signal.getsignal differs under the shim: $(cat "$WORK/py.traced") against $(cat "$WORK/py.native")"

status=0
env CHURN_OUT="$WORK/abort.zst" LD_PRELOAD="$SHIM" "$WORK/sighide" abort 2>"$WORK/abort.err" || status=$?
[ "$status" -eq 134 ] || fail "sighide abort exited with status $status, not 134 (SIGABRT)"
analyze "$WORK/abort.zst" "$WORK/abort.json"
check "$WORK/abort.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
expect("metadata.exit.how", field(report, "metadata", "exit", "how"), "signal")
print("fatal-signal handler invisible; abort after setting the default still died of SIGABRT, trace flushed")
PY
