#!/bin/sh
# dlopen and dlclose during tracing (test/programs/dl.c, dl_lib.c).  Two libraries each
# allocate through their own function and are unloaded before the program ends, between two
# passes of libchurn's writer.  Their allocations must still symbolize to that library's
# function: `apart`, B loaded while A is still there (different addresses); `reuse`, A
# unloaded first and B loaded at the address A had, so the same address means A's code
# before the dlclose and B's after.
. test/lib.sh

build_c dl test/programs/dl.c -ldl
gcc $PROG_CFLAGS -fPIC -shared -o "$WORK/liba.so" test/programs/dl_lib.c ||
    fail "cannot build library A"
gcc $PROG_CFLAGS -fPIC -shared -DLIB_B -o "$WORK/libb.so" test/programs/dl_lib.c ||
    fail "cannot build library B"
for mode in apart reuse; do
    traced "$WORK/$mode.zst" "$WORK/$mode.out" "$WORK/dl" $mode "$WORK/liba.so" "$WORK/libb.so"
    analyze "$WORK/$mode.zst" "$WORK/$mode.json"
    check "$WORK/$mode.json" "$WORK/$mode.out" "$mode" <<'PY'
import sys
from churncheck import *
report, mode = load(sys.argv[1]), sys.argv[3]
base_a, base_b = [int(w) for w in open(sys.argv[2]).read().split("bases ")[1].split()]
if mode == "reuse" and base_a != base_b:
    fail("library B was not loaded where A had been: this run does not test address reuse")
if mode == "apart" and base_a == base_b:
    fail("both libraries loaded at one address while both were open")
for function, count in (("alloc_in_a", 5), ("alloc_in_b", 7)):
    at = [g for g in field(report, "growth") if g["stack"] and g["stack"][0].startswith(function + " ")]
    if sum(g["allocs"] for g in at) != count:
        calls = [(g["allocs"], g["stack"][:2]) for g in field(report, "growth")
                 if len(g["stack"]) > 1 and g["stack"][1].startswith("main ")]
        fail("%s: %d allocations symbolized to %s, expected %d; main's callees: %s"
             % (mode, sum(g["allocs"] for g in at), function, count, calls))
print("%s: both unloaded libraries' allocations symbolize to their own functions" % mode)
PY
done
