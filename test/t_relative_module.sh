#!/bin/sh
# A library the program loads by a relative path (dlopen("./librel.so") in its working
# directory, test/programs/rel_dlopen.c), after which it changes directory: the module map
# holds the file's absolute path, so the library's frames are named with their file:line
# wherever the trace is analyzed.  A trace whose module path is relative anyway (a crafted
# one, or one written without the absolute path) gets a warning naming the module and why
# it is not symbolized, never silence; the vdso, which has no file, gets none.
. test/lib.sh
T=$WORK

mkdir "$T/lib"
build_c rel_dlopen test/programs/rel_dlopen.c -ldl
gcc $PROG_CFLAGS -fPIC -shared -o "$T/lib/librel.so" test/programs/dl_lib.c ||
    fail "cannot build librel.so"

traced "$T/rel.zst" "$T/rel.out" "$T/rel_dlopen" "$T/lib" librel.so
analyze "$T/rel.zst" "$T/rel.json"
check "$T/rel.json" "$T" <<'PY'
import sys
from churncheck import *
report, T = load(sys.argv[1]), sys.argv[2]
rows = [g for g in field(report, "growth") if g["stack"] and g["stack"][0].startswith("alloc_in_a ")]
if sum(g["allocs"] for g in rows) != 9:
    fail("alloc_in_a's 9 blocks are not named: %s" %
         [(g["allocs"], g["stack"][:2]) for g in field(report, "growth")])
for g in rows:
    if "dl_lib.c:" not in g["stack"][0]:
        fail("alloc_in_a's frame has no file:line: %s" % g["stack"][0])
for w in report["warnings"]:
    if w.startswith("module ") and ("librel" in w or "vdso" in w):
        fail("warning: %s" % w)
PY

# The same module recorded as "./librel.so", analyzed in the directory that holds it.
id=$(readelf -n "$T/lib/librel.so" | awk '/Build ID/ { print $3 }')
off=$(nm "$T/lib/librel.so" | awk '$3 == "alloc_in_a" { print $1 }')
[ -n "$id" ] && [ -n "$off" ] || fail "librel.so: no build id or no alloc_in_a"
python3 - "$T" "$id" "$off" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
T, build_id, off = sys.argv[1], sys.argv[2], int(sys.argv[3], 16)
B = 0x7f0000000000
recs = mktrace.prelude(0, 0, modules=[(0, B, B, B + 0x10000, build_id, "./librel.so"),
                                      (1, 0x7fff0000, 0x7fff0000, 0x7fff1000, "",
                                       "linux-vdso.so.1")])
recs += [["stack", 1, [B + off + 8]], ["stack", 2, [0x7fff0010]], ["thread", 1], ["epoch", 0],
         ["alloc", 0, 0x100000, 32, 0, 1], ["alloc", 0, 0x100040, 32, 0, 2], ["exit", 1, 0]]
open(os.path.join(T, "relative.zst"), "wb").write(
    mktrace.build({"segments": [{"seq": 0, "records": recs}]}))
PY
(cd "$T/lib" && "$ANALYZE" --json "$T/relative.zst") >"$T/relative.json" 2>"$T/relative.err" ||
    fail "relative.zst: $(tail -n 1 "$T/relative.err")"
check "$T/relative.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
mine = [w for w in report["warnings"] if w.startswith("module ")]
want = ("module ./librel.so: recorded by a relative path, and the trace does not say "
        "relative to which directory; not symbolized")
if mine != [want]:
    fail("module warnings %s, want [%r]" % (mine, want))
PY
echo "PASS: t_relative_module"
