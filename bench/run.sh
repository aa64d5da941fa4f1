#!/bin/sh
# `make bench`: builds the benchmark's own helpers, then bench/bench.py measures native,
# libchurn (every stack, stacks sampled, histograms only, sampled by bytes) and heaptrack on
# every workload, and python3's alternated pairs against native, and writes
# bench/results/latest.md (BENCH_RESULTS: elsewhere), bench/frames.py adds the cost of the
# runtimes' perf maps (node, CPython 3.12: JavaScript and Python frames), bench/workerd.sh
# adds workerd's throughput under libchurn against native, the micro benchmarks of the live
# map and the stack walk add their tables, and bench/bars.py issue #30's bars.  The Makefile
# has already built build/libchurn.so and build/churn-analyze.  BENCH_RUNS=N sets the rounds
# (default 5), BENCH_PAIRS=N the pairs (default 10); BENCH_QUICK=1 is the short form for CI
# (2 rounds, 2 pairs, small workloads, 2,000 subrequests).
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
# The micro benchmarks of the two hottest structures, built from the shim's own sources (the
# walker with frame pointers, as the Makefile builds it; the benchmark's recursion without).
$CC -O2 -Wall -Wextra -std=gnu11 -D_GNU_SOURCE -Iinclude -Ishim -pthread -o build/bench/livemap_bench \
    bench/livemap_bench.c shim/record/livemap.c shim/record/order.c
$CC -O2 -Wall -Wextra -std=gnu11 -D_GNU_SOURCE -Iinclude -Ishim -fno-omit-frame-pointer \
    -c shim/walk/cfi.c -o build/bench/cfi.o
$CC -O2 -Wall -Wextra -std=gnu11 -D_GNU_SOURCE -Iinclude -Ishim -fno-omit-frame-pointer \
    -c shim/walk/cfi_parse.c -o build/bench/cfi_parse.o
$CC -O2 -Wall -Wextra -std=gnu11 -D_GNU_SOURCE -Iinclude -Ishim -fomit-frame-pointer \
    -o build/bench/unwind_bench bench/unwind_bench.c build/bench/cfi.o build/bench/cfi_parse.o \
    shim/walk/jitrule.c -lunwind
/usr/bin/python3 bench/bench.py
RESULTS=${BENCH_RESULTS:-bench/results/latest.md}
echo "bench: JavaScript and Python frames, perf map off and on" >&2
{
    echo
    /usr/bin/python3 bench/frames.py
} >>"$RESULTS"
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
echo "bench: micro benchmarks (live map, stack walk)" >&2
{
    echo
    echo "## Micro benchmarks"
    echo
    echo '```'
    build/bench/livemap_bench $([ "${BENCH_QUICK:-}" = 1 ] && echo 200000)
    build/bench/unwind_bench
    echo '```'
    echo
    python3 bench/bars.py
} >>"$RESULTS"
tail -n 40 "$RESULTS"
