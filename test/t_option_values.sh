#!/bin/sh
# Bad option values: each is refused with one libchurn line naming the variable, the program
# runs to its end untraced (no trace file), and good values of the same options still trace.
# CHURN_EPOCH_SIGNAL takes by number only the signals it takes by name, and the real-time ones:
# a fault signal made an epoch tick re-faults forever, KILL and STOP cannot be caught, 32 and
# 33 are glibc's own.  A number is digits only (no sign, no blanks) for every option.
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

run() {
    rm -f "$WORK/t.zst"
    status=0
    env "$1" CHURN_OUT="$WORK/t.zst" LD_PRELOAD="$SHIM" "$WORK/tiny" >"$WORK/out" 2>"$WORK/err" ||
        status=$?
    [ "$status" -eq 0 ] && [ "$(cat "$WORK/out")" = ran ] ||
        fail "$1: the program exited with status $status: $(tail -n 1 "$WORK/err")"
}

refused=0
for value in CHURN_EPOCH_SIGNAL=11 CHURN_EPOCH_SIGNAL=SEGV CHURN_EPOCH_SIGNAL=9 \
    CHURN_EPOCH_SIGNAL=19 CHURN_EPOCH_SIGNAL=32 CHURN_EPOCH_SIGNAL=33 CHURN_EPOCH_SIGNAL=7 \
    CHURN_EPOCH_SIGNAL=4 CHURN_EPOCH_SIGNAL=8 CHURN_EPOCH_SIGNAL=6 CHURN_EPOCH_SIGNAL=5 \
    CHURN_EPOCH_SIGNAL=31 CHURN_EPOCH_SIGNAL=0 CHURN_EPOCH_SIGNAL=65 CHURN_EPOCH_SIGNAL=+12 \
    "CHURN_EPOCH_SIGNAL= 12" CHURN_EPOCH_SIGNAL=SIG12 CHURN_EPOCH_SIGNAL=012x \
    CHURN_EPOCH_SIGNAL=18446744073709551628 \
    CHURN_RING_MB=+5 "CHURN_RING_MB= 5" CHURN_STACK_DEPTH=+8 "CHURN_EPOCH_MS= 10" \
    CHURN_SEGMENT_KB=99999999999999999999999 CHURN_QUIET=+0; do
    run "$value"
    lines=$(grep -c '^libchurn: ' "$WORK/err" || true)
    [ "$lines" = 1 ] && grep -q "bad value ${value%%=*}=" "$WORK/err" ||
        fail "$value: expected one 'bad value' line, got: $(cat "$WORK/err")"
    [ ! -e "$WORK/t.zst" ] || fail "$value was refused but a trace was written"
    refused=$((refused + 1))
done

accepted=0
for value in CHURN_EPOCH_SIGNAL=USR2 CHURN_EPOCH_SIGNAL=SIGUSR1 CHURN_EPOCH_SIGNAL=12 \
    CHURN_EPOCH_SIGNAL=10 CHURN_EPOCH_SIGNAL=1 CHURN_EPOCH_SIGNAL=34 CHURN_EPOCH_SIGNAL=64 \
    CHURN_RING_MB=17 CHURN_EPOCH_MS=10; do
    run "$value"
    ! grep -q '^libchurn: ' "$WORK/err" || fail "$value: a libchurn line: $(cat "$WORK/err")"
    [ -s "$WORK/t.zst" ] || fail "$value was accepted but no trace was written"
    accepted=$((accepted + 1))
done
echo "$refused bad values refused with one line each, $accepted good ones traced"
