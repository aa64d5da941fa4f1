#!/bin/sh
# `make bench`: builds the benchmark's own helpers, then bench/bench.py measures native,
# libchurn, libchurn with CHURN_EVENTS=0 and heaptrack on every workload and writes
# bench/results/latest.md (BENCH_RESULTS: elsewhere), and bench/workerd.sh adds workerd's
# throughput under libchurn against native.  The Makefile has already built build/libchurn.so
# and build/churn-analyze.  BENCH_RUNS=N sets the rounds (default 5); BENCH_QUICK=1 is the
# short form for CI (2 rounds, small workloads, 2,000 subrequests).
set -eu
cd "$(dirname "$0")/.."
CC=${CC:-gcc}
mkdir -p build/bench
for tool in heaptrack heaptrack_print sqlite3 zstd /usr/bin/python3; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "bench: $tool is not installed (make bench installs the test packages)" >&2
        exit 1
    fi
done
# The pinned nodejs.org build the node test uses, not whatever `node` is on PATH, so that the
# node figures are of the same executable on every machine.
BENCH_NODE=$(test/node/install.sh)
export BENCH_NODE
# Frame pointers kept so that libchurn's stack capture sees the benchmark's own frames.
$CC -O2 -g -Wall -Wextra -std=gnu11 -fno-omit-frame-pointer -pthread \
    -o build/bench/threads bench/threads.c
$CC -O2 -Wall -Wextra -std=gnu11 -shared -fPIC -o build/bench/libmaxrss.so bench/maxrss_preload.c
$CC -O2 -Wall -Wextra -std=gnu11 -o build/bench/detach bench/detach.c
/usr/bin/python3 bench/bench.py
RESULTS=${BENCH_RESULTS:-bench/results/latest.md}
if [ "${BENCH_QUICK:-}" = 1 ]; then
    export BENCH_ROUNDS=1 BENCH_SUBREQUESTS=2000
fi
echo "bench: workerd (${BENCH_SUBREQUESTS:-20000} subrequests a run)" >&2
{
    echo
    echo "## workerd: ${BENCH_SUBREQUESTS:-20000} cross-worker subrequests a run, ${BENCH_ROUNDS:-3} round(s), alternated (bench/workerd.sh)"
    echo
    echo '```'
    sh bench/workerd.sh
    echo '```'
} >>"$RESULTS"
tail -n 6 "$RESULTS"
