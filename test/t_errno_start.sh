#!/bin/sh
# errno as the program finds it (test/programs/errno_start.c): libchurn's start-up fails some
# calls of its own on the way (lookups, files), and neither main's first look at errno nor a
# successful malloc may show what they left.  The program prints the same as natively.
. test/lib.sh

build_c errno_start test/programs/errno_start.c
"$WORK/errno_start" >"$WORK/native.out" 2>&1 || fail "natively: $(tail -n 1 "$WORK/native.out")"
traced "$WORK/t.zst" "$WORK/t.out" "$WORK/errno_start"
cmp -s "$WORK/native.out" "$WORK/t.out" ||
    fail "under the shim it printed '$(cat "$WORK/t.out")', natively '$(cat "$WORK/native.out")'"
echo "errno at main and after malloc as natively: $(cat "$WORK/t.out")"
