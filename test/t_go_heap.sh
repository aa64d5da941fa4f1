#!/bin/sh
# Go's runtime keeps Go's objects on a heap it maps itself (0xc000000000 up), outside malloc
# by design, like a JS engine's.  test/programs/gogrow (cgo, so it loads libc and libchurn)
# holds 500 blocks of C.malloc and grows its Go heap by 40 MiB over 2 s.  Built with Debian's
# golang-go, once as it is and once stripped (-ldflags=-s): the blind-spot detector must name
# the growth as Go's own heap, with the executable as the culprit carrying Go (by its
# collector's function in .symtab, stripped by its name among the bytes of the pclntab), on
# stderr and at the top of the report; the 500 C blocks are in the trace, 100 bytes each.
# Go leaves by its own exit_group, so the trace ends at a checkpoint: epochs of 200 ms give
# the report its readings.
. test/lib.sh

for build in plain stripped; do
    if [ "$build" = stripped ]; then
        build_go "gogrow_$build" test/programs/gogrow -ldflags=-s
    else
        build_go "gogrow_$build" test/programs/gogrow
    fi
    CHURN_EPOCH_MS=200 traced "$WORK/$build.zst" "$WORK/$build.out" "$WORK/gogrow_$build"
    err="$WORK/$build.out.err"
    grep -qx "40000 500" "$WORK/$build.out" || fail "$build: gogrow printed $(cat "$WORK/$build.out")"
    [ "$(grep -c "in mappings of Go's own heap (outside malloc by design: the 'outside' part of the RSS split; traced heap +[0-9.]* MiB); not traced: objects on the Go heap; the largest growth: c0" "$err")" -eq 1 ] ||
        fail "$build: not one line naming Go's own heap on stderr: $(head -n 2 "$err")"
    if [ "$build" = plain ]; then
        how="its garbage collector's functions are in its symbols"
    else
        how="its garbage collector's messages are in its bytes: it is stripped"
    fi
    grep -qF "likely culprit: $WORK/gogrow_$build, which calls mmap and carries Go ($how)" "$err" ||
        fail "$build: the culprit line does not name Go: $(sed -n 2p "$err")"
    "$ANALYZE" "$WORK/$build.zst" >"$WORK/$build.txt" 2>&1 || fail "churn-analyze failed on the $build trace"
    sed -n 3p "$WORK/$build.txt" | grep -q "WARNING: about .* MiB of RSS growth (the shim's estimate) is in mappings of Go's own heap, in gogrow_$build (outside malloc by design: the 'outside' part of the RSS split); not traced: objects on the Go heap" ||
        fail "$build: the report's first warning does not name Go's heap: $(sed -n 3p "$WORK/$build.txt")"
    analyze "$WORK/$build.zst" "$WORK/$build.json"
    check "$WORK/$build.json" "$build" <<'PY'
import sys
from churncheck import *
report, build = load(sys.argv[1]), sys.argv[2]
cgo = [g for g in field(report, "growth") if g["stack"] and "_Cfunc__Cmalloc" in g["stack"][0]]
expect("%s: C.malloc's blocks (allocations, live, bytes)" % build,
       (sum(g["allocs"] for g in cgo), sum(g["live_count"] for g in cgo), sum(g["live_bytes"] for g in cgo)),
       (500, 500, 50000))
print("%s: Go's heap named, C.malloc's 500 blocks of 100 bytes traced" % build)
PY
done
