#!/bin/sh
# Allocators called by their own names (shim/ways/way_named.c): test/programs/named_alloc.c calls
# mimalloc's API (mi_malloc, mi_heap_malloc, mi_calloc, mi_malloc_aligned, mi_new,
# mi_realloc) from Debian's libmimalloc, and jemalloc's *allocx family from its static
# library (linked into the executable) and from its shared one.  None of those calls goes
# through a malloc libchurn exports; each must be traced through the patch way in, with every
# epoch's counts, bytes and live change exact, and malloc calls that reach the same allocator
# counted once; mi_heap_destroy's blocks freed, mi_expand's growth in place.  test/programs/named_dl.c loads a library linking mimalloc with dlopen, after
# libchurn started: traced from the dlopen on, exactly.  test/programs/prefixed_alloc.c stands
# in for a prefixed jemalloc (je_, _rjem_; Debian ships none): exact, and its books read
# through the prefixed mallctl; under rp and sn_ for rpmalloc's and snmalloc's names, which
# are the same shapes: exact, except an rpmalloc with rpmalloc_heap_free_all, said untraced.
. test/lib.sh

JEMALLOC_A=/usr/lib/x86_64-linux-gnu/libjemalloc_pic.a
[ -f "$JEMALLOC_A" ] || fail "$JEMALLOC_A missing: apt-get install libjemalloc-dev"
[ -f /usr/include/mimalloc.h ] || fail "mimalloc.h missing: apt-get install libmimalloc-dev"
build_c named_mimalloc test/programs/named_alloc.c -DNAMED_MIMALLOC -lmimalloc
build_c named_jemalloc_static test/programs/named_alloc.c -DNAMED_JEMALLOC "$JEMALLOC_A" \
    -lpthread -ldl -lm
build_c named_jemalloc_shared test/programs/named_alloc.c -DNAMED_JEMALLOC -ljemalloc
build_c named_dl test/programs/named_dl.c
build_c prefixed_je test/programs/prefixed_alloc.c -DPREFIX=je_
build_c prefixed_rjem test/programs/prefixed_alloc.c -DPREFIX=_rjem_
# rpmalloc's and snmalloc's C names are the same shapes under rp and sn_ (neither in Debian)
build_c prefixed_rp test/programs/prefixed_alloc.c -DPREFIX=rp
build_c prefixed_sn test/programs/prefixed_alloc.c -DPREFIX=sn_
build_c prefixed_rp_free_all test/programs/prefixed_alloc.c -DPREFIX=rp -DHEAP_FREE_ALL
gcc $PROG_CFLAGS -std=gnu11 -shared -fPIC -o "$WORK/libnamed_dl.so" test/programs/named_dl_lib.c \
    -lmimalloc >"$WORK/libnamed_dl.build.log" 2>&1 ||
    fail "cannot compile named_dl_lib.c: $(tail -n 1 "$WORK/libnamed_dl.build.log")"

for prog in named_mimalloc named_jemalloc_static named_jemalloc_shared named_dl prefixed_je \
    prefixed_rjem prefixed_rp prefixed_sn; do
    args=
    case $prog in
    prefixed_rp) want="tracing rpmalloc in the executable through the patch way in" ;;
    prefixed_sn) want="tracing snmalloc in the executable through the patch way in" ;;
    prefixed_*) want="tracing jemalloc in the executable through the patch way in" ;;
    named_dl)
        want="tracing mimalloc in .*libmimalloc.so.* through the patch way in"
        args=$WORK/libnamed_dl.so ;;
    named_mimalloc) want="tracing mimalloc in .*libmimalloc.so.* through the patch way in" ;;
    named_jemalloc_static) want="tracing jemalloc in the executable through the patch way in" ;;
    *) want="tracing jemalloc in .*libjemalloc.so.* through the patch way in" ;;
    esac
    # shellcheck disable=SC2086
    traced "$WORK/$prog.zst" "$WORK/$prog.out" "$WORK/$prog" $args
    grep -q "$want" "$WORK/$prog.out.err" ||
        fail "$prog: no line '$want' on stderr: $(head -n 1 "$WORK/$prog.out.err")"
    analyze "$WORK/$prog.zst" "$WORK/$prog.json"
    check "$WORK/$prog.json" "$WORK/$prog.out" "$prog" <<'PY'
import sys
from churncheck import *
report, prog = load(sys.argv[1]), sys.argv[3]
count = {"named_mimalloc": 11, "named_dl": 3}.get(prog, 2 if prog.startswith("prefixed_") else 5)
expect_phases(report, sys.argv[2], prog, count)
# The report names every allocator traced and its way in, and carries mimalloc's books.
name = field(report, "metadata", "allocator")
want = {"named_mimalloc": "mimalloc in /", "named_jemalloc_static": "jemalloc in the executable",
        "named_jemalloc_shared": "jemalloc in /", "named_dl": None,
        "prefixed_je": "jemalloc in the executable", "prefixed_rjem": "jemalloc in the executable",
        "prefixed_rp": "rpmalloc in the executable", "prefixed_sn": "snmalloc in the executable"}[prog]
if want and (want not in name or " via patch" not in name.split(want, 1)[1][:80]):
    fail("%s: the report's allocator %r does not name %r traced via patch" % (prog, name, want))
if prog == "named_mimalloc":
    commit = field(report, "epochs")[-1].get("counters", {}).get("mi_process_info.current_commit")
    if not commit:
        fail("no mi_process_info.current_commit in the last epoch's counters: %r" % commit)
if prog.startswith("named_jemalloc") and not name.startswith("jemalloc ["):
    fail("%s: the allocator behind malloc is named %r, not jemalloc" % (prog, name))
if prog in ("prefixed_je", "prefixed_rjem"):
    mark = "%smallctl.stats.mapped" % {"prefixed_je": "je_", "prefixed_rjem": "_rjem_"}[prog]
    seen = [e.get("counters", {}).get(mark) for e in field(report, "epochs")]
    if 987654321 not in seen:
        fail("%s: the books were not read through %s: %r" % (prog, mark, seen))
print("%s: %d phases exact; allocator %s" % (prog, count, name))
PY
done

# rpmalloc_heap_free_all frees blocks it does not name: such an rpmalloc is not traced, and
# says so, rather than leave every block it freed live in the trace.
traced "$WORK/free_all.zst" "$WORK/free_all.out" "$WORK/prefixed_rp_free_all"
grep -q "rpmalloc in the executable has rpmalloc_heap_free_all, which frees blocks it does not name; not traced" \
    "$WORK/free_all.out.err" ||
    fail "rpmalloc with rpmalloc_heap_free_all: no line saying it is not traced: $(head -n 1 "$WORK/free_all.out.err")"
if grep -q "tracing rpmalloc" "$WORK/free_all.out.err"; then
    fail "rpmalloc with rpmalloc_heap_free_all was traced"
fi
