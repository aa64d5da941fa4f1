#!/bin/sh
# The shim under sanitizers (Makefile target `sanitize`; why two builds: see the Makefile).
# AddressSanitizer + UBSan: the shim's live map, stack table (also while it cannot grow),
# segment tables, address coder and a thread ring, linked into test/programs/shim_units.c and
# driven against reference models.  UBSan with -fno-sanitize-recover: libchurn-ubsan.so
# preloaded into workloads of other tests (threads, C++ operators, realloc and memalign edges,
# fork, epoch signals and allocating handlers, thread exits, page calls, the demo, python3 and
# a program with its own malloc, traced through the patching way): any undefined behaviour in
# the shim aborts the program, and each trace must still be readable.
. test/lib.sh

make -s sanitize >"$WORK/make.log" 2>&1 || fail "make sanitize failed: $(tail -n 1 "$WORK/make.log")"
# The stack table keeps the tables it outgrew mapped for lock-free readers, by design:
# leak detection would report exactly those.
ASAN_OPTIONS=detect_leaks=0 build/sanitize/shim-units >"$WORK/units.out" 2>&1 ||
    { cat "$WORK/units.out"; fail "shim units under ASan/UBSan: $(grep -m1 -E 'FAIL|ERROR|runtime error' "$WORK/units.out")"; }
cat "$WORK/units.out"

SHIM=$ROOT/build/sanitize/libchurn-ubsan.so
export UBSAN_OPTIONS=print_stacktrace=1
make -s build/demo-workload || fail "cannot build the demo workload"
build_c threads test/programs/threads.c -pthread
build_cxx new_delete test/programs/new_delete.cc
build_c realloc_edges test/programs/realloc_edges.c
build_c memalign test/programs/memalign.c
build_c fork test/programs/fork.c
build_c signals test/programs/signals.c -pthread
build_c sigalloc test/programs/sigalloc.c -pthread
build_c thread_exit test/programs/thread_exit.c -pthread
build_c tls_dtor test/programs/tls_dtor.c -pthread
build_c maps test/programs/maps.c
build_c own_malloc test/programs/own_malloc.c

run() {
    name=$1
    shift
    traced "$WORK/$name.zst" "$WORK/$name.out" "$@"
    if grep -q "runtime error" "$WORK/$name.out.err"; then
        cat "$WORK/$name.out.err"
        fail "$name: UBSan reported undefined behaviour in the shim"
    fi
    analyze "$WORK/$name.zst" "$WORK/$name.json"
    echo "ubsan shim: $name traced cleanly"
}
run demo build/demo-workload 5000
run threads "$WORK/threads"
CHURN_PRELOAD_EXTRA=$TCMALLOC run threads-tcmalloc "$WORK/threads"
run new_delete "$WORK/new_delete"
run realloc_edges "$WORK/realloc_edges"
run memalign "$WORK/memalign"
CHURN_FORK=follow run fork "$WORK/fork" "$WORK"
CHURN_EPOCH_SIGNAL=USR2 run signals "$WORK/signals"
CHURN_EPOCH_SIGNAL=USR2 run sigalloc "$WORK/sigalloc"
run thread_exit "$WORK/thread_exit"
run tls_dtor "$WORK/tls_dtor"
run maps "$WORK/maps"
run own_malloc "$WORK/own_malloc"
PYTHONMALLOC=malloc CHURN_EPOCH_MS=5 run python python3 -c \
    "import json; d=[json.dumps({'k': i, 'v': [i] * 20}) for i in range(200000)]; print(len(d))"
echo "shim units clean under ASan/UBSan, 14 workloads clean under the UBSan shim"
