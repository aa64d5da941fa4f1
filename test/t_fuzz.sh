#!/bin/sh
# libFuzzer over the analyzer (test/fuzz/fuzz_trace.c, built with AddressSanitizer and
# UndefinedBehaviorSanitizer): first every input that once crashed it (test/fuzz/regressions),
# then a short fuzzing run from the seed corpus of real traces (test/fuzz/corpus), on a copy
# so the repository's corpus does not change.  `make fuzz` runs longer (FUZZ_SECONDS).  A crash
# fails the test and leaves its input in build/test/fuzz/: add it to test/fuzz/regressions.
# With CHURN_TEST_DECODER=slow the fuzzer is build/slow/fuzz/fuzz_trace, the analyzer without
# its decoding shortcuts (Makefile), for half the time.
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh

SECONDS_TO_FUZZ=${FUZZ_SECONDS:-20}
FUZZER=$ROOT/build/fuzz/fuzz_trace
if [ "${CHURN_TEST_DECODER:-fast}" = slow ]; then
    SECONDS_TO_FUZZ=$((SECONDS_TO_FUZZ / 2))
    FUZZER=$ROOT/build/slow/fuzz/fuzz_trace
fi
command -v clang >/dev/null || fail "clang is not installed (libFuzzer): apt-get install clang"
make -s "${FUZZER#$ROOT/}" >"$WORK/build.log" 2>&1 || fail "cannot build the fuzzer: $(tail -n 1 "$WORK/build.log")"

regressions=$(ls test/fuzz/regressions/* 2>/dev/null | wc -l)
if [ "$regressions" -gt 0 ]; then
    "$FUZZER" -runs=0 test/fuzz/regressions/* >"$WORK/regressions.log" 2>&1 ||
        fail "a regression input crashes the analyzer again: $(grep -m1 -E 'ERROR|runtime error' "$WORK/regressions.log")"
fi

mkdir -p "$WORK/corpus"
cp test/fuzz/corpus/* "$WORK/corpus/"
seeds=$(ls "$WORK/corpus" | wc -l)
[ "$seeds" -ge 5 ] || fail "the seed corpus has $seeds traces"
status=0
(cd "$WORK" && "$FUZZER" -max_total_time="$SECONDS_TO_FUZZ" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 corpus >fuzz.log 2>&1) || status=$?
if [ "$status" -ne 0 ]; then
    grep -m3 -E 'ERROR|runtime error|Test unit written' "$WORK/fuzz.log"
    fail "the fuzzer crashed the analyzer (exit $status): input in $WORK/crash-* or timeout-*"
fi
runs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$WORK/fuzz.log")
[ "${runs:-0}" -gt 100 ] || fail "the fuzzer ran only ${runs:-0} inputs in $SECONDS_TO_FUZZ s"
echo "fuzz: $regressions regression input(s) clean; $runs inputs in $SECONDS_TO_FUZZ s from $seeds seed traces, no crash"
