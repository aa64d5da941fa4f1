#!/bin/sh
# The trace file is never a way to hurt the traced program or someone else's file: a symlink
# planted at CHURN_OUT is refused, not followed (its target stays intact); an output that
# cannot be created costs one line on stderr and the program runs on untraced; a new trace
# is created with mode 0600.
. test/lib.sh

echo secret >"$WORK/target"
ln -s "$WORK/target" "$WORK/planted.zst"
out=$(CHURN_OUT="$WORK/planted.zst" LD_PRELOAD="$SHIM" /bin/echo runs 2>"$WORK/err1") ||
    fail "the program failed when CHURN_OUT was a symlink"
[ "$out" = runs ] || fail "the program's output changed: $out"
[ "$(cat "$WORK/target")" = secret ] || fail "the symlink's target was written through"
[ "$(grep -c libchurn "$WORK/err1")" = 1 ] || fail "expected one libchurn line about the symlink, got: $(cat "$WORK/err1")"

out=$(CHURN_OUT="$WORK/missing/dir/t.zst" LD_PRELOAD="$SHIM" /bin/echo runs 2>"$WORK/err2") ||
    fail "the program failed when CHURN_OUT could not be created"
[ "$out" = runs ] || fail "the program's output changed: $out"
grep -q "cannot create" "$WORK/err2" || fail "no line saying the trace cannot be created: $(cat "$WORK/err2")"

CHURN_OUT="$WORK/new.zst" LD_PRELOAD="$SHIM" /bin/true
mode=$(stat -c %a "$WORK/new.zst")
[ "$mode" = 600 ] || fail "trace created with mode $mode, not 600"
echo "symlink refused, uncreatable output reported once, mode 600"
