#!/bin/sh
# Every C++ operator new/delete variant (plain, array, nothrow, sized, aligned and their
# combinations; test/programs/new_delete.cc) gives an exact count in its own epoch, with
# glibc and with tcmalloc or jemalloc preloaded after the shim (those define operator new
# themselves and never call malloc for it).
. test/lib.sh

[ -f "$TCMALLOC" ] || fail "$TCMALLOC missing: apt-get install libgoogle-perftools-dev"
[ -f "$JEMALLOC" ] || fail "$JEMALLOC missing: apt-get install libjemalloc-dev"
build_cxx new_delete test/programs/new_delete.cc

for allocator in glibc tcmalloc jemalloc; do
    case $allocator in
    glibc) CHURN_PRELOAD_EXTRA= ;;
    tcmalloc) CHURN_PRELOAD_EXTRA=$TCMALLOC ;;
    jemalloc) CHURN_PRELOAD_EXTRA=$JEMALLOC ;;
    esac
    export CHURN_PRELOAD_EXTRA
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

# operator new out of memory (test/programs/new_handler.cc): the new_handler's free of its
# reserve block is traced, and so are the bad_alloc object's allocation and the catch's free.
unset CHURN_PRELOAD_EXTRA
build_cxx new_handler test/programs/new_handler.cc
traced "$WORK/handler.zst" "$WORK/handler.out" "$WORK/new_handler"
analyze "$WORK/handler.zst" "$WORK/handler.json"
check "$WORK/handler.json" "$WORK/handler.out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
expect_epoch(report, ph["reserve"], "the reserve block", allocs=1, frees=0, alloc_bytes=1 << 20)
oom = epochs(report)[ph["oom"]]
expect("oom epoch (allocs, frees): the exception object, the reserve and the exception",
       (oom["allocs"], oom["frees"]), (1, 2))
if oom["free_bytes"] < (1 << 20):
    fail("oom epoch freed %d bytes: the reserve's free is missing" % oom["free_bytes"])
expect("unknown frees", field(report, "totals", "unknown_frees"), 0)
expect("oom epoch's live (count, bytes) change: the reserve gone, the exception freed",
       live_delta(report, ph["oom"], "oom"), (-1, -(1 << 20)))
print("new_handler's free and bad_alloc's object traced")
PY
