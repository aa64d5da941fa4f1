#!/bin/sh
# Runs the tests test/t_*.sh from the repository root, each under a time limit, with its output
# kept in build/test/logs/<name>.log.  `sh test/run.sh` runs all of them in sorted order;
# `sh test/run.sh NAME...` runs a subset (NAME may be `fork`, `t_fork` or `test/t_fork.sh`).
# Prints PASS/FAIL per test and closes with the single line `N passed, N failed`.
#
# A full run then runs the tests marked "# decoders: fast and slow" again over the analyzer
# without its decoding shortcuts (CHURN_TEST_DECODER=slow, test/lib.sh), shown as NAME.slow
# with its log in NAME.slow.log.  `sh test/run.sh NAME@slow` runs one so.
set -u
cd "$(dirname "$0")/.."

TIMEOUT=${CHURN_TEST_TIMEOUT:-300}
LOGS=build/test/logs
mkdir -p "$LOGS"

if [ $# -eq 0 ]; then
    set -- $(ls test/t_*.sh | sort) \
        $(grep -l '^# decoders: fast and slow' test/t_*.sh | sort | sed 's/$/@slow/')
fi

passed=0
failed=0
for arg in "$@"; do
    decoder=${CHURN_TEST_DECODER:-fast}
    case $arg in
    *@slow) decoder=slow arg=${arg%@slow} ;;
    esac
    name=$(basename "$arg" .sh)
    name=${name#t_}
    script=test/t_$name.sh
    [ "$decoder" = fast ] || name=$name.$decoder
    log=$LOGS/$name.log
    if [ ! -f "$script" ]; then
        echo "FAIL $name: no such test $script"
        failed=$((failed + 1))
        continue
    fi
    # A test runs under its own #! line when executable (git keeps the bit), else under sh.
    if [ -x "$script" ]; then
        CHURN_TEST_DECODER=$decoder timeout -k 10 "$TIMEOUT" "./$script" >"$log" 2>&1
    else
        CHURN_TEST_DECODER=$decoder timeout -k 10 "$TIMEOUT" sh "$script" >"$log" 2>&1
    fi
    status=$?
    if [ "$status" -eq 0 ]; then
        echo "PASS $name"
        passed=$((passed + 1))
    else
        if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
            reason="timed out after ${TIMEOUT}s"
        else
            # The test's own verdict, not whatever a cleanup trap printed after it.
            reason=$(grep '^FAIL: ' "$log" | tail -n 1)
            [ -n "$reason" ] || reason=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)
            reason=${reason#FAIL: }
            [ -n "$reason" ] || reason="exit status $status, no output"
        fi
        echo "FAIL $name: $reason"
        failed=$((failed + 1))
    fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
