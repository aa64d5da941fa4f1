#!/bin/sh
# A traced program that execs with an environment of its own that does not preload libchurn
# (test/programs/exec_env.c, like `env -i env`): the new image gets exactly that environment
# (CHURN_EXEC_OF was added to it, and `env -i env` printed it), and the first image's trace
# still ends in the exec.
. test/lib.sh

build_c exec_env test/programs/exec_env.c
status=0
"$WORK/exec_env" >"$WORK/native" 2>&1 || status=$?
[ "$status" -eq 0 ] || fail "exec_env exited with status $status without the shim"
grep -qx "A=1" "$WORK/native" || fail "exec_env's second image did not print its environment"
traced "$WORK/trace.zst" "$WORK/traced" "$WORK/exec_env"
if ! cmp -s "$WORK/native" "$WORK/traced"; then
    fail "the exec'd environment differs under the shim: $(tr '\n' ' ' <"$WORK/traced")"
fi
analyze "$WORK/trace.zst" "$WORK/report.json"
check "$WORK/report.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
expect("exit", field(report, "metadata", "exit", "how"), "exec")
print("an exec'd environment without the shim stays the program's own; trace ends in the exec")
PY
