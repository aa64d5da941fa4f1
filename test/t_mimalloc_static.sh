#!/bin/sh
# mimalloc linked into an executable under its own names.  Debian's libmimalloc-dev ships only
# a shared library, and no npm package holds mimalloc's sources; CPython 3.13 compiles
# mimalloc into libpython, and the static libpython3.13.a of this kind of machine's Python
# 3.13 (pyenv's, beside the 3.11 that is python3) carries it, mi_malloc and all.  Linked from
# that archive: test/programs/named_alloc.c's every phase is traced exactly through the patch
# way in, with mimalloc's books; test/programs/mi_grow.c keeps 40 MiB through mi_malloc, traced
# to the allocation; stripped, the same program is reported blind (stderr and the report's
# "not traced", both naming mimalloc from its warnings among the bytes), never silently short.
. test/lib.sh

ROOT_PY=${PYENV_ROOT:-$HOME/.pyenv}
ARCHIVE=
for a in "$ROOT_PY"/versions/3.1[3-9]*/lib/python3.*/config-3.*/libpython3.*.a; do
    [ -f "$a" ] && nm "$a" 2>/dev/null | grep -q ' T mi_heap_malloc$' && ARCHIVE=$a && break
done
[ -n "$ARCHIVE" ] ||
    fail "no static libpython 3.13+ carrying mimalloc under $ROOT_PY/versions (this kind of machine has pyenv's 3.13.0)"
PYDIR=${ARCHIVE%/lib/python3.*}
MI_INCLUDE=$(ls -d "$PYDIR"/include/python3.*/internal/mimalloc | head -n 1)
[ -f "$MI_INCLUDE/mimalloc.h" ] || fail "no mimalloc.h beside $ARCHIVE"
echo "mimalloc from $ARCHIVE"

build_c static_mimalloc test/programs/named_alloc.c -DNAMED_MIMALLOC -DMIMALLOC_STATIC \
    -I"$MI_INCLUDE" "$ARCHIVE" -lm -ldl -lpthread -lutil
build_c mi_grow test/programs/mi_grow.c -I"$MI_INCLUDE" "$ARCHIVE" -lm -ldl -lpthread -lutil
strip -o "$WORK/mi_grow_stripped" "$WORK/mi_grow"
nm -D "$WORK/static_mimalloc" | grep -q ' mi_malloc$' && fail "mi_malloc is in the dynamic symbols: not the case under test"
nm "$WORK/static_mimalloc" | grep -q ' [Tt] mi_malloc$' || fail "mi_malloc is not defined in the executable"

traced "$WORK/static.zst" "$WORK/static.out" "$WORK/static_mimalloc"
grep -q "tracing mimalloc in the executable through the patch way in" "$WORK/static.out.err" ||
    fail "no 'tracing mimalloc in the executable' line: $(head -n 1 "$WORK/static.out.err")"
analyze "$WORK/static.zst" "$WORK/static.json"
check "$WORK/static.json" "$WORK/static.out" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
expect_phases(report, sys.argv[2], "static mimalloc", 11)
name = field(report, "metadata", "allocator")
if "mimalloc in the executable via patch" not in name:
    fail("the report's allocator %r does not name mimalloc in the executable via patch" % name)
commit = field(report, "epochs")[-1].get("counters", {}).get("mi_process_info.current_commit")
if not commit:
    fail("no mi_process_info.current_commit in the last epoch's counters: %r" % commit)
print("static mimalloc: 11 phases exact; allocator %s; mimalloc commits %d B" % (name, commit))
PY

traced "$WORK/grow.zst" "$WORK/grow.out" "$WORK/mi_grow"
grep -q 'not traced' "$WORK/grow.out.err" && fail "mi_grow (traced) raised the blind-spot warning"
analyze "$WORK/grow.zst" "$WORK/grow.json"
check "$WORK/grow.json" "$WORK/grow.out" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
allocated = int(open(sys.argv[2]).read().split()[2])
mine = [g for g in field(report, "growth") if g["stack"] and g["stack"][0].startswith("main ")]
kept = sum(g["live_bytes"] for g in mine)
expect("mi_grow: bytes kept by main's mi_malloc calls", kept, allocated)
expect("mi_grow: mi_malloc calls of main", sum(g["allocs"] for g in mine), allocated // 4096)
if any("not traced" in w for w in field(report, "warnings")):
    fail("mi_grow: a 'not traced' warning: %r" % field(report, "warnings"))
print("mi_grow: %d B kept through mimalloc in the executable, all traced" % kept)
PY

traced "$WORK/stripped.zst" "$WORK/stripped.out" "$WORK/mi_grow_stripped"
cmp -s "$WORK/grow.out" "$WORK/stripped.out" || fail "the stripped copy printed other output"
err="$WORK/stripped.out.err"
grep -q "likely culprit: the executable $WORK/mi_grow_stripped, which calls mmap and is stripped (no .symtab), carrying mimalloc (its warnings are among its bytes)" "$err" ||
    fail "stripped mi_grow: not reported blind with its mimalloc on stderr: $(grep culprit "$err" || head -n 2 "$err")"
analyze "$WORK/stripped.zst" "$WORK/stripped.json"
check "$WORK/stripped.json" "$WORK/stripped.out" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
allocated = int(open(sys.argv[2]).read().split()[2])
if not any("not traced" in w and "carries mimalloc" in w for w in field(report, "warnings")):
    fail("stripped mi_grow: no 'not traced' warning naming mimalloc: %r" % field(report, "warnings"))
untraced = max(r.get("untraced_bytes") or 0 for r in field(report, "fragmentation"))
if not allocated // 2 <= untraced <= allocated + (4 << 20):
    fail("stripped mi_grow: untraced_bytes %d for the %d B kept" % (untraced, allocated))
print("stripped mi_grow: reported blind, %d of %d B not traced" % (untraced, allocated))
PY
