#!/bin/sh
# A program that defines only malloc and free (test/programs/malloc_free_only.c): glibc's
# realloc and calloc know nothing of its blocks, so libchurn's start-up must not make glibc
# call them (pthread_getattr_np on the main thread reads /proc/self/maps with getline, which
# grows its malloc'd buffer with realloc).  Under the shim it runs as natively, prints the
# same, and its allocations are traced through the patch way in.
. test/lib.sh

build_c malloc_free_only test/programs/malloc_free_only.c -fno-builtin
"$WORK/malloc_free_only" >"$WORK/native.out" 2>&1 || fail "natively: $(tail -n 1 "$WORK/native.out")"
traced "$WORK/t.zst" "$WORK/t.out" "$WORK/malloc_free_only"
cmp -s "$WORK/native.out" "$WORK/t.out" ||
    fail "under the shim it printed '$(cat "$WORK/t.out")', natively '$(cat "$WORK/native.out")'"
analyze "$WORK/t.zst" "$WORK/t.json"
check "$WORK/t.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
allocs = sum(g["allocs"] for g in growth_with(report, "main"))
if allocs < 1001:
    fail("%d allocations of main in the trace, the program made 1001" % allocs)
expect("metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
print("malloc and free only: ran as natively, %d allocations of main traced" % allocs)
PY
