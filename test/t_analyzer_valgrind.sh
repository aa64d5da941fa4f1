#!/bin/sh
# churn-analyze under valgrind memcheck: on a real trace (the demo workload, 30,000 requests,
# with a ring small enough to have wrapped, and a multi-threaded one) in every output mode,
# no invalid read or write, no use of uninitialised values, and no definite, indirect or
# possible leak (--error-exitcode makes any of them fail).  No suppression file: none is
# needed (libdw and zstd included).
. test/lib.sh

command -v valgrind >/dev/null || fail "valgrind is not installed (make test-deps)"
make -s build/demo-workload || fail "cannot build the demo workload"
rm -f "$WORK/demo.zst"
CHURN_OUT="$WORK/demo.zst" CHURN_SEGMENT_KB=64 CHURN_RING_MB=1 LD_PRELOAD="$SHIM" \
    build/demo-workload 30000 || fail "the demo workload failed under the shim"
"$ANALYZE" --json "$WORK/demo.zst" >"$WORK/demo.json" 2>/dev/null ||
    fail "churn-analyze --json demo.zst failed"
check "$WORK/demo.json" <<'PY'
import sys
from churncheck import *
if not field(load(sys.argv[1]), "metadata", "segments_dropped"):
    fail("the demo's 1 MiB ring did not wrap: the test wants a wrapped ring under memcheck")
PY
build_c threads test/programs/threads.c -pthread
traced "$WORK/threads.zst" "$WORK/threads.out" "$WORK/threads"

memcheck() {
    log=$WORK/vg.$1.log
    shift
    status=0
    valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible \
        --errors-for-leak-kinds=definite,indirect,possible --track-origins=yes -q \
        "$ANALYZE" "$@" >"$WORK/out" 2>"$log" || status=$?
    if [ "$status" -ne 0 ]; then
        head -n 40 "$log"
        fail "memcheck on churn-analyze $*: status $status ($(grep -m1 -E '==[0-9]+== [A-Z]' "$log"))"
    fi
    echo "memcheck clean: churn-analyze $*"
}
memcheck text "$WORK/demo.zst"
memcheck json --json "$WORK/demo.zst"
memcheck window --json --epochs 29000:29500 "$WORK/demo.zst"
memcheck html --html -o "$WORK/report.html" "$WORK/demo.zst"
memcheck svg --svg=growth --base 25000:26000 -o "$WORK/diff.svg" "$WORK/demo.zst"
memcheck pprof --pprof -o "$WORK/demo.pb.gz" "$WORK/demo.zst"
memcheck threads --json "$WORK/threads.zst"
# A file that is no trace: one line, non-zero exit, and still nothing leaked.
status=0
valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
    -q "$ANALYZE" --json "$WORK/threads.out" >/dev/null 2>"$WORK/vg.bad.log" || status=$?
[ "$status" -eq 1 ] || { cat "$WORK/vg.bad.log"; fail "churn-analyze on a non-trace under memcheck: status $status, not 1"; }
echo "memcheck clean: churn-analyze on a non-trace"
