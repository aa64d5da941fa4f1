#!/bin/sh
# Every C++ operator new/delete variant (plain, array, nothrow, sized, aligned and their
# combinations; test/programs/new_delete.cc) gives an exact count in its own epoch, with
# glibc and with tcmalloc or jemalloc preloaded after the shim (those define operator new
# themselves and never call malloc for it).
. test/lib.sh

build_cxx new_delete test/programs/new_delete.cc

for allocator in $ALLOCATORS; do
    use_allocator "$allocator"
    traced "$WORK/$allocator.zst" "$WORK/$allocator.out" "$WORK/new_delete"
    analyze "$WORK/$allocator.zst" "$WORK/$allocator.json"
    check "$WORK/$allocator.json" "$WORK/$allocator.out" "$allocator" <<'PY'
import sys
from churncheck import *
report, ph, allocator = load(sys.argv[1]), phases(sys.argv[2]), sys.argv[3]
cases = [line.split()[1:] for line in open(sys.argv[2]) if line.startswith("case ")]
expect("number of cases printed", len(cases), 12)
for name, count, size in cases:
    count, size = int(count), int(size)
    what = "%s with %s" % (name, allocator)
    expect_epoch(report, ph[name], what, allocs=count, frees=count,
                 alloc_bytes=count * size, free_bytes=count * size)
    expect("%s live (count, bytes) change" % what, live_delta(report, ph[name], what), (0, 0))
expect_epoch(report, ph["impossible_nothrow"], "failed nothrow new with " + allocator,
             allocs=0, frees=0)
print("%s: 12 new/delete pairs exact" % allocator)
PY
done

# operator new out of memory (test/programs/new_handler.cc), with glibc and with tcmalloc and
# jemalloc preloaded (whose operator new reads the handler through std::set_new_handler): the
# new_handler's free of its reserve block is traced, and so are the bad_alloc object's
# allocation and the catch's free; with glibc no free anywhere is of an unknown block.
build_cxx new_handler test/programs/new_handler.cc
for allocator in $ALLOCATORS; do
    use_allocator "$allocator"
    traced "$WORK/handler.$allocator.zst" "$WORK/handler.$allocator.out" "$WORK/new_handler"
    analyze "$WORK/handler.$allocator.zst" "$WORK/handler.$allocator.json"
    check "$WORK/handler.$allocator.json" "$WORK/handler.$allocator.out" $allocator <<'PY'
import sys
from churncheck import *
report, ph, allocator = load(sys.argv[1]), phases(sys.argv[2]), sys.argv[3]
expect_epoch(report, ph["reserve"], "the reserve block with " + allocator, allocs=1, frees=0,
             alloc_bytes=1 << 20)
oom = epochs(report)[ph["oom"]]
expect("oom epoch with %s (allocs, frees): the exception; the reserve and the exception" % allocator,
       (oom["allocs"], oom["frees"]), (1, 2))
if oom["free_bytes"] <= (1 << 20):
    fail("oom epoch with %s freed %d bytes: the reserve's or the exception's free is missing"
         % (allocator, oom["free_bytes"]))
expect("oom epoch's live (count, bytes) change with %s: the reserve gone, the exception freed" % allocator,
       live_delta(report, ph["oom"], "oom"), (-1, -(1 << 20)))
if allocator == "glibc":
    expect("unknown frees", field(report, "totals", "unknown_frees"), 0)
print("%s: new_handler's free and bad_alloc's object traced" % allocator)
PY
done
