#!/bin/sh
# workerd under libchurn against workerd alone: the seed's case (test/workerd/, 20,000
# subrequests a run by default), native, under LD_PRELOAD=build/libchurn.so and under it with
# CHURN_SAMPLE_BYTES=524288 (libchurn-sample512k) in alternation so that drift of the shared
# machine hits all alike.  Prints subrequests/s of every run, the medians and the ratios
# libchurn/native and libchurn-sample512k/native (the median of each round's own ratio),
# the latter against its bar (0.97, issue 30).  BENCH_ROUNDS
# (3) and BENCH_SUBREQUESTS (20000) change the size; CHURN_* variables in the environment reach
# the traced runs.
#   BENCH_CALLGRIND=1 sh bench/workerd.sh   counts instructions per subrequest instead (a count,
# not a time: the same on a loaded machine): callgrind over workerd natively, under libchurn
# (every stack) and sampled (CHURN_SAMPLE_BYTES=524288), runs of 200 and 1,000 subrequests, the
# difference divided by 800 so that start-up cancels out; the main thread apart from the others
# (libchurn's writer, V8's).  About three minutes; the callgrind files stay in
# build/bench/workerd/ for callgrind_annotate.
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${BENCH_ROUNDS:-3}
SUBREQUESTS=${BENCH_SUBREQUESTS:-20000}
OUT=build/bench/workerd

[ -f build/libchurn.so ] || { echo "bench/workerd.sh: build/libchurn.so is missing: run make" >&2; exit 1; }
WORKERD=$(test/workerd/install.sh)
rm -rf "$OUT"
mkdir -p "$OUT"

# callgrind_count MODE N: "main other", the instructions of workerd's main thread and of its
# other threads in a run of N subrequests.  drive.py starts the wrapper from the config's
# directory; libchurn is preloaded into workerd, not into valgrind or the wrapper.
callgrind_count() {
    base=$PWD/$OUT/$1.$2
    set -- "$1" --subrequests "$2" --env "CG_OUT=$base.cg"
    [ "$1" != native ] && set -- "$@" --env "CG_PRELOAD=$PWD/build/libchurn.so" \
        --env "CHURN_OUT=$base.zst" --env "CHURN_EPOCH_AT=workerd::IoContext::IoContext"
    [ "$1" = libchurn-sample512k ] && set -- "$@" --env "CHURN_SAMPLE_BYTES=524288"
    shift
    if ! python3 test/workerd/drive.py --workerd "$PWD/$OUT/callgrind-workerd" "$@" \
        --startup-timeout 600 --request-timeout 600 --log "$base.log" >"$base.json"; then
        echo "bench/workerd.sh: callgrind run failed: $(tail -n 1 "$base.log")" >&2
        exit 1
    fi
    rm -f "$base".zst*
    # env's exec leaves a file too: workerd's main thread is the largest thread 1
    main=0 other=0
    for f in "$base".cg.*-01; do
        m=$(awk '/^(summary|totals):/ { print $2; exit }' "$f")
        [ "$m" -gt "$main" ] || continue
        main=$m other=0
        for g in "${f%-01}"-*; do
            [ "$g" = "$f" ] || other=$((other + $(awk '/^(summary|totals):/ { print $2; exit }' "$g")))
        done
    done
    echo "$main $other"
}

if [ "${BENCH_CALLGRIND:-0}" = 1 ]; then
    command -v valgrind >/dev/null || { echo "bench/workerd.sh: valgrind is missing" >&2; exit 1; }
    case $WORKERD in /*) ;; *) WORKERD=$PWD/$WORKERD ;; esac
    printf '%s\n' '#!/bin/sh' \
        'if [ -n "${CG_PRELOAD:-}" ]; then set -- env LD_PRELOAD="$CG_PRELOAD" "$W" "$@"; else set -- "$W" "$@"; fi' \
        'exec valgrind --tool=callgrind --separate-threads=yes --smc-check=all-non-file --trace-children=yes --callgrind-out-file="$CG_OUT.%p" "$@"' \
        | sed "2s|^|W='$WORKERD'; |" >"$OUT/callgrind-workerd"
    chmod +x "$OUT/callgrind-workerd"
    for mode in native libchurn libchurn-sample512k; do
        # shellcheck disable=SC2046
        set -- $(callgrind_count "$mode" 200) $(callgrind_count "$mode" 1000)
        [ $# -eq 4 ] || exit 1 # a run failed, and said why
        echo "$mode: instructions per subrequest: main thread $((($3 - $1) / 800)), other" \
            "threads $((($4 - $2) / 800))"
    done
    exit 0
fi

run() {
    mode=$1
    round=$2
    base=$OUT/$mode.$round
    if [ "$mode" = native ]; then
        set --
    else
        set -- --env "LD_PRELOAD=$PWD/build/libchurn.so" --env "CHURN_OUT=$PWD/$base.zst" \
            --env "CHURN_EPOCH_AT=workerd::IoContext::IoContext"
        [ "$mode" = libchurn-sample512k ] && set -- "$@" --env "CHURN_SAMPLE_BYTES=524288"
    fi
    if ! python3 test/workerd/drive.py --workerd "$WORKERD" --subrequests "$SUBREQUESTS" \
        --log "$base.log" "$@" >"$base.json"; then
        echo "bench/workerd.sh: $mode round $round failed: $(tail -n 1 "$base.log" 2>/dev/null)" >&2
        grep '"error"' "$base.json" >&2 || true
        exit 1
    fi
}

# Odd rounds start native, even rounds start traced: a warm-up or drift favours neither.
i=1
while [ "$i" -le "$ROUNDS" ]; do
    if [ $((i % 2)) -eq 1 ]; then
        run native "$i"
        run libchurn "$i"
        run libchurn-sample512k "$i"
    else
        run libchurn-sample512k "$i"
        run libchurn "$i"
        run native "$i"
    fi
    i=$((i + 1))
done

python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for mode in ("native", "libchurn", "libchurn-sample512k"):
    runs = [json.load(open("%s/%s.%d.json" % (out, mode, i))) for i in range(1, rounds + 1)]
    rows[mode] = runs
    rates = [r["subrequests_per_s"] for r in runs]
    # workerd's own CPU time per subrequest: steadier than wall time on a shared machine.
    cpu_us = [1e6 * r["workerd_cpu_s"] / r["subrequests"] for r in runs]
    growth = [r["rss_growth_bytes_per_subrequest"] for r in runs]
    print("%-19s subrequests/s %s  median %.0f;  workerd CPU us/subrequest median %.1f;"
          "  RSS start %.0f kB, growth B/subrequest median %.0f"
          % (mode, " ".join("%.0f" % x for x in rates), statistics.median(rates),
             statistics.median(cpu_us), statistics.median(r["rss_start_kb"] for r in runs),
             statistics.median(growth)))


def paired(key, mode="libchurn"):
    """Median over rounds of a traced mode's figure against native's in the same round: the
    runs of a round are back to back, so a slow period of the machine falls on all."""
    return statistics.median(t[key] / n[key] for t, n in zip(rows[mode], rows["native"]))


print("ratio libchurn/native: subrequests/s %.3f, workerd CPU time %.3f (medians of the rounds' "
      "own ratios)" % (paired("subrequests_per_s"), paired("workerd_cpu_s")))
sampled = paired("subrequests_per_s", "libchurn-sample512k")
print("ratio libchurn-sample512k/native: subrequests/s %.3f, workerd CPU time %.3f; bar >= 0.97 "
      "of native throughput: %s" % (sampled, paired("workerd_cpu_s", "libchurn-sample512k"),
                                    "met" if sampled >= 0.97 else "NOT met"))
PY
