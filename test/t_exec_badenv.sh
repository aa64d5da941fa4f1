#!/bin/sh
# exec with an environment the kernel cannot read (test/programs/exec_badenv.c): execve,
# execvpe, execveat and fexecve with a bad pointer among envp's entries, with envp itself a
# bad pointer, and with an entry that runs into an unreadable page.  Natively each fails with
# EFAULT; under the shim each must fail the same way (libchurn reads envp before the call and
# must not crash on it), the program goes on, and its trace is whole.
. test/lib.sh

build_c exec_badenv test/programs/exec_badenv.c
"$WORK/exec_badenv" >"$WORK/native.out" 2>&1 || fail "natively: $(tail -n 1 "$WORK/native.out")"
traced "$WORK/t.zst" "$WORK/t.out" "$WORK/exec_badenv"
cmp -s "$WORK/native.out" "$WORK/t.out" ||
    fail "under the shim: $(diff "$WORK/native.out" "$WORK/t.out" | grep '^>' | head -n 1)"
analyze "$WORK/t.zst" "$WORK/t.json"
check "$WORK/t.json" "$WORK/t.out" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
n = int(open(sys.argv[2]).read().split("allocations ")[1])
allocs = sum(g["allocs"] for g in growth_with(report, "main"))
if allocs < n:
    fail("%d allocations of main in the trace, the program made %d" % (allocs, n))
expect("metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
print("12 execs with unreadable environments failed with EFAULT as natively; trace whole")
PY
