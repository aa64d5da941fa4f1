#!/bin/sh
# Instructions per malloc + free pair, natively and in libchurn's modes, counted by callgrind
# (a count, not a time: the same on a loaded machine).  Each mode runs bench/pairs.c at two
# sizes and the difference is divided by the pairs between them, so start-up cancels out.
# Prints the program's thread and the whole process (with libchurn's writer thread).
#   sh bench/instructions.sh [PAIRS]        (default 100000; the runs use PAIRS and 2 PAIRS)
set -eu
cd "$(dirname "$0")/.."
n=${1:-100000}
command -v valgrind >/dev/null || { echo "bench/instructions.sh: valgrind is missing" >&2; exit 1; }
[ -f build/libchurn.so ] || { echo "bench/instructions.sh: build/libchurn.so is missing (make)" >&2; exit 1; }
mkdir -p build/bench
${CC:-cc} -O2 -Wall -Wextra -o build/bench/pairs bench/pairs.c
work=$(mktemp -d build/bench/instructions.XXXXXX)
trap 'rm -rf "$work"' EXIT

# count PRELOAD PAIRS [VAR=VALUE...]: "main-thread all-threads" instructions
count() {
    pre=$1 pairs=$2
    shift 2
    rm -f "$work"/cg.*
    if [ "$pre" = none ]; then
        valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$work/cg.%p" \
            build/bench/pairs "$pairs" >/dev/null 2>"$work/err"
    else
        env CHURN_OUT="$work/t.churn" "$@" valgrind --tool=callgrind --separate-threads=yes \
            --trace-children=yes --callgrind-out-file="$work/cg.%p" \
            env LD_PRELOAD="$PWD/build/libchurn.so" build/bench/pairs "$pairs" \
            >/dev/null 2>"$work/err"
    fi
    rm -f "$work"/t.churn*
    # with --trace-children, env's own run leaves files too: the program's first thread is
    # the largest
    main=0 all=0
    for f in "$work"/cg.*-01; do
        m=$(awk '/^(summary|totals):/ { print $2; exit }' "$f")
        if [ "$m" -gt "$main" ]; then
            main=$m
            all=0
            for g in "${f%-01}"-*; do
                all=$((all + $(awk '/^(summary|totals):/ { print $2; exit }' "$g")))
            done
        fi
    done
    echo "$main $all"
}

printf '| mode | program thread | whole process |\n|---|---:|---:|\n'
for mode in native "every event" "CHURN_EVENTS=0" "CHURN_SAMPLE_BYTES=524288" \
    "CHURN_SAMPLE_BYTES=1099511627776"; do
    case $mode in
    native) pre=none vars= ;;
    "every event") pre=lib vars= ;;
    *) pre=lib vars=$mode ;;
    esac
    # shellcheck disable=SC2086
    a=$(count $pre "$n" $vars)
    # shellcheck disable=SC2086
    b=$(count $pre $((2 * n)) $vars)
    echo "$a $b" | awk -v name="$mode" -v n="$n" \
        '{ printf "| %s | %.0f | %.0f |\n", name, ($3 - $1) / n, ($4 - $2) / n }'
done
