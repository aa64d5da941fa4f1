#!/bin/sh
# Setting and reading the dispositions of the signals libchurn flushes on gives the same
# answers under the shim as without it (test/programs/sigforms.c), line by line: sigset,
# sysv_signal and bsd_signal returned libchurn's hidden handler as the previous one and the
# program's handler then read back as the default; a default set with flags and a mask read
# back without them.
. test/lib.sh

build_c sigforms test/programs/sigforms.c
status=0
"$WORK/sigforms" >"$WORK/native" 2>&1 || status=$?
[ "$status" -eq 0 ] || fail "sigforms exited with status $status without the shim"
traced "$WORK/trace.zst" "$WORK/traced" "$WORK/sigforms"
grep -q "SIGINT taken 10000 times" "$WORK/native" || fail "sigforms did not run to its end"
if ! cmp -s "$WORK/native" "$WORK/traced"; then
    diff "$WORK/native" "$WORK/traced" || true
    fail "under the shim: $(diff "$WORK/native" "$WORK/traced" | grep '^>' | head -n 1)"
fi
echo "signal dispositions read the same under the shim"
