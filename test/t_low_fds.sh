#!/bin/sh
# Under a low descriptor limit (ulimit -n 16, test/programs/fdcount.c counts the files it can
# still open) a process libchurn does not trace keeps every descriptor: when the trace cannot
# be created ("not tracing") and in a forked child under CHURN_FORK=stop, the program opens as
# many files as it does natively (libunwind's pipe and /proc/self/statm are not held).  A
# traced process may hold the trace's own descriptors, no more than 4.
. test/lib.sh

build_c fdcount test/programs/fdcount.c
count() { # LABEL VARIABLES...: runs fdcount under ulimit -n 16, prints its output
    label=$1
    shift
    (ulimit -n 16 && env "$@" "$WORK/fdcount" fork) >"$WORK/$label.out" 2>"$WORK/$label.err" ||
        fail "$label: fdcount failed: $(tail -n 1 "$WORK/$label.err")"
}
count native X=1
native_child=$(sed -n 's/^child //p' "$WORK/native.out")
native=$(sed -n 's/^count //p' "$WORK/native.out")
[ "$native" -gt 8 ] || fail "natively only $native files could be opened under ulimit -n 16"

count untraced LD_PRELOAD="$SHIM" CHURN_OUT="$WORK/no/such/dir/t.zst"
grep -q "not tracing" "$WORK/untraced.err" || fail "no 'not tracing' line: $(cat "$WORK/untraced.err")"
expect_count() {
    got=$(sed -n "s/^$2 //p" "$WORK/$1.out")
    [ "$got" = "$3" ] || fail "$1: $2 opened $got files, natively $3"
}
expect_count untraced count "$native"
expect_count untraced child "$native_child"

count stop LD_PRELOAD="$SHIM" CHURN_OUT="$WORK/stop.zst" CHURN_FORK=stop
expect_count stop child "$native_child"
[ -s "$WORK/stop.zst" ] || fail "CHURN_FORK=stop: the parent wrote no trace"
traced=$(sed -n 's/^count //p' "$WORK/stop.out")
[ "$traced" -ge $((native - 4)) ] || fail "the traced parent opened $traced files, natively $native"
analyze "$WORK/stop.zst" "$WORK/stop.json"
echo "ulimit -n 16: $native files natively, as many when not traced and in a CHURN_FORK=stop child; $traced while traced"
