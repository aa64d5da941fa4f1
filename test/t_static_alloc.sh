#!/bin/sh
# Programs that link their own allocator into the executable, so every malloc call binds to it
# and libchurn's exported malloc is never called: jemalloc's static library
# (test/programs/static_jemalloc.c) and an allocator of the program's own
# (test/programs/own_malloc.c), each running the C malloc family pattern of static_pattern.h;
# and test/programs/new_delete.cc linked with jemalloc's operators or with the program's own
# (own_new.cc), and mimalloc carried by the executable (test/programs/exe_mimalloc.c).  Under
# the shim they must be traced through the patch way in, with every epoch's counts, bytes and
# live change exact, and the report must name the allocator traced, with its books or none:
# never glibc's (its mallinfo2 describes a heap these programs do not use).  libmimalloc.so
# preloaded after the shim (the ELF way) is named too.
. test/lib.sh

JEMALLOC_A=/usr/lib/x86_64-linux-gnu/libjemalloc_pic.a
[ -f "$JEMALLOC_A" ] || fail "$JEMALLOC_A missing: apt-get install libjemalloc-dev"
build_c static_jemalloc test/programs/static_jemalloc.c "$JEMALLOC_A" -lpthread -ldl -lm
build_c own_malloc test/programs/own_malloc.c -fno-builtin
build_cxx new_delete_jemalloc test/programs/new_delete.cc "$JEMALLOC_A" -lpthread -ldl -lm
gcc $PROG_CFLAGS -std=gnu11 -fno-builtin -DOWN_MALLOC_NO_MAIN -c -o "$WORK/own_malloc_lib.o" \
    test/programs/own_malloc.c >"$WORK/own_malloc_lib.build.log" 2>&1 ||
    fail "cannot compile own_malloc.c as a library: $(tail -n 1 "$WORK/own_malloc_lib.build.log")"
build_cxx new_delete_own test/programs/new_delete.cc test/programs/own_new.cc "$WORK/own_malloc_lib.o"
MIMALLOC=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2
[ -f "$MIMALLOC" ] || fail "$MIMALLOC missing: apt-get install libmimalloc-dev"
build_c exe_mimalloc test/programs/exe_mimalloc.c -fno-builtin -lmimalloc
build_cxx new_delete test/programs/new_delete.cc

for prog in static_jemalloc own_malloc new_delete_jemalloc new_delete_own exe_mimalloc; do
    traced "$WORK/$prog.zst" "$WORK/$prog.out" "$WORK/$prog"
    grep -q "defines malloc itself; tracing it through the patch way in" "$WORK/$prog.out.err" ||
        fail "$prog was not traced through the patch way: $(head -n 1 "$WORK/$prog.out.err")"
    analyze "$WORK/$prog.zst" "$WORK/$prog.json"
done

CHURN_PRELOAD_EXTRA=$MIMALLOC traced "$WORK/preload_mimalloc.zst" "$WORK/preload_mimalloc.out" \
    "$WORK/new_delete"
analyze "$WORK/preload_mimalloc.zst" "$WORK/preload_mimalloc.json"
check "$WORK" <<'PY'
import os, sys
from churncheck import *
work = sys.argv[1]
# program: (allocator, books, model); the allocator's name without the ways in that follow it
# when libchurn also traces allocators called by their own names (docs/format.md, ALLOCATOR)
want = {
    "static_jemalloc": ("jemalloc", "jemalloc", "jemalloc"),
    "new_delete_jemalloc": ("jemalloc", "jemalloc", "jemalloc"),
    "own_malloc": ("unknown (the executable's own)", None, "page"),
    "new_delete_own": ("unknown (the executable's own)", None, "page"),
    "exe_mimalloc": ("mimalloc", None, "page"),
    "preload_mimalloc": ("mimalloc", None, "page"),
}
for prog, (allocator, books, model) in want.items():
    report = load(os.path.join(work, prog + ".json"))
    fm = field(report, "fragmentation_model")
    expect(prog + ": allocator, books, model",
           (field(report, "metadata", "allocator").split(" [")[0], fm["books"], fm["model"]),
           (allocator, books, model))
print("allocators named: %s" % ", ".join("%s %s" % (p, w[0]) for p, w in want.items()))
PY

for prog in static_jemalloc own_malloc exe_mimalloc; do
    check "$WORK/$prog.json" "$WORK/$prog.out" "$prog" <<'PY'
import sys
from churncheck import *
prog = sys.argv[3]
want_cases = 7 if prog == "static_jemalloc" else 8
expect_phases(load(sys.argv[1]), sys.argv[2], prog, want_cases)
print("%s: %d phases exact" % (prog, want_cases))
PY
done

for prog in new_delete_jemalloc new_delete_own; do
    check "$WORK/$prog.json" "$WORK/$prog.out" "$prog" <<'PY'
import sys
from churncheck import *
report, ph, prog = load(sys.argv[1]), phases(sys.argv[2]), sys.argv[3]
cases = [line.split()[1:] for line in open(sys.argv[2]) if line.startswith("case ")]
expect("number of cases printed", len(cases), 12)
for name, count, size in cases:
    count, size = int(count), int(size)
    what = "%s %s" % (prog, name)
    expect_epoch(report, ph[name], what, allocs=count, frees=count,
                 alloc_bytes=count * size, free_bytes=count * size)
    expect("%s live (count, bytes) change" % what, live_delta(report, ph[name], what), (0, 0))
expect_epoch(report, ph["impossible_nothrow"], prog + " failed nothrow new", allocs=0, frees=0)
print("%s: 12 new/delete pairs exact" % prog)
PY
done
