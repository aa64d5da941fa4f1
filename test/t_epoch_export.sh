#!/bin/sh
# churn_epoch_begin is a symbol of libchurn.so as well as churn.h's inline: a program that
# declares it weak by hand (test/programs/epoch_weak.c) and Python through ctypes
# (test/programs/epoch_ctypes.py, dlsym on the process) begin epochs under LD_PRELOAD, each
# epoch holding exactly what the program allocated in it.
. test/lib.sh
N=12

build_c epoch_weak test/programs/epoch_weak.c
traced "$WORK/weak.zst" "$WORK/weak.out" "$WORK/epoch_weak" $N
analyze "$WORK/weak.zst" "$WORK/weak.json"

# Debian's python3, not a version manager's shim (a shell script would be traced too).
# PYTHONMALLOC=pymalloc sets the interpreter's allocators itself, which leaves pymalloc
# untraced (docs/runtimes.md): the epochs then hold the bytearrays' buffers alone.
status=0
env PYTHONMALLOC=pymalloc CHURN_OUT="$WORK/py.zst" LD_PRELOAD="$SHIM" /usr/bin/python3 test/programs/epoch_ctypes.py $N \
    >"$WORK/py.out" 2>"$WORK/py.err" || status=$?
[ $status = 0 ] || fail "python3 with ctypes exited with status $status: $(tail -n 1 "$WORK/py.err")"
analyze "$WORK/py.zst" "$WORK/py.json"

check "$WORK/weak.json" "$WORK/weak.out" "$WORK/py.json" "$WORK/py.out" $N <<'PY'
import sys
from churncheck import *
n = int(sys.argv[5])

def begun(out, what):
    got = [int(l.split()[1]) for l in open(out) if l.startswith("epoch ")]
    expect("%s: epoch numbers churn_epoch_begin returned" % what, got, list(range(1, n + 1)))
    return got

c = load(sys.argv[1])
for i, e in enumerate(begun(sys.argv[2], "weak declaration"), 1):
    expect_epoch(c, e, "weak declaration's epoch %d" % i, allocs=i, frees=0,
                 alloc_bytes=100 * i)
py = load(sys.argv[3])
for i, e in enumerate(begun(sys.argv[4], "python3 ctypes"), 1):
    # i bytearray buffers of 5001 bytes (the objects themselves are pymalloc's, untraced here)
    expect_epoch(py, e, "python3 ctypes epoch %d" % i, allocs=i, alloc_bytes=5001 * i)
print("weak declaration and python3 ctypes: %d epochs each, exact" % n)
PY
