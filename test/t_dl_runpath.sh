#!/bin/sh
# A library that dlopens another by a bare name, found only through the library's own RUNPATH
# (test/programs/dl_runpath.c, dl_runpath_lib.c): glibc searches the directories of the
# object that called dlopen, so libchurn's dlopen must leave that caller as the program's.
# Under the shim both loads, plain and RTLD_DEEPBIND, succeed as natively, and each leaf's
# allocations are in the trace: its kept blocks live at exit, its frees all seen (the deep one
# through libchurn's rebinding).
. test/lib.sh

build_c dl_runpath test/programs/dl_runpath.c -ldl
mkdir -p "$WORK/lib/runpath"
gcc $PROG_CFLAGS -fPIC -shared -Wl,--enable-new-dtags,-rpath,'$ORIGIN/runpath' \
    -o "$WORK/lib/libchurn_runpath.so" test/programs/dl_runpath_lib.c -ldl ||
    fail "cannot build the library with a RUNPATH"
readelf -d "$WORK/lib/libchurn_runpath.so" | grep -q 'RUNPATH.*\$ORIGIN/runpath' ||
    fail "the library was linked without its RUNPATH"
for leaf in plain deep; do
    gcc $PROG_CFLAGS -fPIC -shared -DLEAF -o "$WORK/lib/runpath/libchurn_leaf_$leaf.so" \
        test/programs/dl_runpath_lib.c || fail "cannot build the $leaf leaf"
done

"$WORK/dl_runpath" "$WORK/lib/libchurn_runpath.so" >"$WORK/native.out" 2>&1 ||
    fail "natively: $(tail -n 1 "$WORK/native.out")"
grep -q '^deep: 42$' "$WORK/native.out" || fail "natively: $(head -n 2 "$WORK/native.out" | tr '\n' ' ')"
traced "$WORK/t.zst" "$WORK/t.out" "$WORK/dl_runpath" "$WORK/lib/libchurn_runpath.so"
cmp -s "$WORK/native.out" "$WORK/t.out" ||
    fail "under the shim: $(diff "$WORK/native.out" "$WORK/t.out" | grep '^>' | head -n 1)"
analyze "$WORK/t.zst" "$WORK/t.json"
check "$WORK/t.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
work = growth_with(report, "leaf_work")
# per leaf: 100 mallocs and 100 strdups freed, 10 blocks kept
expect("leaf_work's allocations, frees and blocks live at exit",
       tuple(sum(g[k] for g in work) for k in ("allocs", "frees", "live_count")), (420, 400, 20))
expect("frees of unknown objects", field(report, "totals", "unknown_frees"), 0)
print("both leaves opened through the library's RUNPATH; their 420 allocations and 400 frees traced")
PY
