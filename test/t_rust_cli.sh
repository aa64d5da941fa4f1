#!/bin/sh
# Real Rust command-line tools from npm.  First ast-grep (pinned, test/astgrep/install.sh).  Its
# executable keeps its symbol table, the Rust global allocator's shims (__rust_alloc,
# __rust_realloc under v0 mangling) among it, and its global allocator is the system one: every
# allocation reaches glibc's malloc through the PLT.  On a known workload (60 generated
# JavaScript files, one thread) the output under the shim must be what ast-grep prints
# natively, the trace complete, and its allocation count and bytes within 1 % of an
# independent count: valgrind's memcheck, which replaces malloc inside its own virtual machine
# and prints "total heap usage: N allocs, N frees, N bytes allocated".  An unreachable npm
# registry fails the test: the real component is required.  Then Biome (pinned,
# test/biome/install.sh), which links jemalloc into a stripped executable: nothing can trace
# it, so formatting 1,000 files (its memory grows with them) must be reported blind, on stderr
# naming Biome as a stripped executable carrying jemalloc (its warnings are among its bytes) and
# at the top of the report as "not traced", naming jemalloc too, with its
# output and status what they are natively.
. test/lib.sh

AST_GREP=$(test/astgrep/install.sh 2>"$WORK/install.err") || fail "$(tail -n 1 "$WORK/install.err")"
command -v valgrind >/dev/null || fail "valgrind missing: apt-get install valgrind"

readelf -S "$AST_GREP" | grep -q '\.symtab' || fail "$AST_GREP is stripped: not the case under test"
nm "$AST_GREP" | grep -q '___rust_alloc$' || fail "$AST_GREP keeps no __rust_alloc"
nm -D "$AST_GREP" | grep -q ' U malloc@' || fail "$AST_GREP does not call malloc through the PLT"

mkdir -p "$WORK/src"
python3 - "$WORK/src" <<'PY'
import sys
for i in range(60):
    with open("%s/f%02d.js" % (sys.argv[1], i), "w") as f:
        for k in range(200):
            f.write('function f%d_%d(a, b) { console.log(a + b, "x%d"); return a * b; }\n' % (i, k, k))
PY
run() {
    "$@" run -j 1 -p 'console.log($$$A)' -l js "$WORK/src"
}

run "$AST_GREP" >"$WORK/native.out" 2>"$WORK/native.err" || fail "ast-grep natively: $(tail -n 1 "$WORK/native.err")"
[ "$(grep -c 'console.log' "$WORK/native.out")" -ge 12000 ] ||
    fail "ast-grep found $(grep -c 'console.log' "$WORK/native.out") matches natively, not the 12000 written"
run valgrind --tool=memcheck --leak-check=no "$AST_GREP" >"$WORK/valgrind.out" 2>"$WORK/valgrind.err" ||
    fail "ast-grep under valgrind: $(tail -n 1 "$WORK/valgrind.err")"
cmp -s "$WORK/native.out" "$WORK/valgrind.out" || fail "ast-grep's output changed under valgrind"
usage=$(grep 'total heap usage' "$WORK/valgrind.err") || fail "valgrind printed no heap usage"

rm -f "$WORK/traced.zst"
status=0
env CHURN_OUT="$WORK/traced.zst" LD_PRELOAD="$SHIM" "$AST_GREP" run -j 1 -p 'console.log($$$A)' \
    -l js "$WORK/src" >"$WORK/traced.out" 2>"$WORK/traced.err" || status=$?
[ "$status" -eq 0 ] || fail "ast-grep under the shim exited with status $status: $(tail -n 1 "$WORK/traced.err")"
cmp -s "$WORK/native.out" "$WORK/traced.out" || fail "ast-grep's output changed under the shim"
analyze "$WORK/traced.zst" "$WORK/traced.json"
check "$WORK/traced.json" "$usage" <<'PY'
import re, sys
from churncheck import *
report, usage = load(sys.argv[1]), sys.argv[2]
m = re.search(r"total heap usage: ([\d,]+) allocs, ([\d,]+) frees, ([\d,]+) bytes allocated", usage)
if not m:
    fail("cannot read valgrind's line %r" % usage)
v_allocs, v_frees, v_bytes = (int(x.replace(",", "")) for x in m.groups())
meta, totals = field(report, "metadata"), field(report, "totals")
expect("ast-grep: metadata.exit", field(meta, "exit"), {"how": "normal", "detail": 0})
expect("ast-grep: dropped events", field(totals, "dropped_events"), 0)
allocs, nbytes = field(totals, "allocs"), field(totals, "alloc_bytes")
for what, mine, theirs in (("allocations", allocs, v_allocs), ("bytes allocated", nbytes, v_bytes)):
    if abs(mine - theirs) > 0.01 * theirs:
        fail("ast-grep: %d %s traced, valgrind counts %d" % (mine, what, theirs))
print("ast-grep: %d allocations (valgrind %d), %d B (valgrind %d), output unchanged"
      % (allocs, v_allocs, nbytes, v_bytes))
PY

BIOME=$(test/biome/install.sh 2>"$WORK/biome-install.err") || fail "$(tail -n 1 "$WORK/biome-install.err")"
readelf -S "$BIOME" | grep -q '\.symtab' && fail "$BIOME keeps a .symtab: not the case under test"
strings "$BIOME" | grep -q jemalloc || fail "$BIOME does not carry jemalloc's strings"
mkdir -p "$WORK/big"
python3 - "$WORK/big" <<'PY'
import sys
for i in range(1000):
    with open("%s/f%04d.js" % (sys.argv[1], i), "w") as f:
        for k in range(200):
            f.write('function f%d_%d(a, b) { console.log(a + b, "x%d"); return a * b; }\n' % (i, k, k))
PY
# Biome prints (on stderr) how long it took; the rest of what it prints must not change.
biome() {
    status=0
    env "$@" "$BIOME" format --max-diagnostics=0 "$WORK/big" >"$out" 2>"$out.err" || status=$?
    sed '/^Checked 1000 files in /d; /^libchurn: /d' "$out.err" >"$out.kept"
}
out=$WORK/biome-native.out biome PATH="$PATH"
native_status=$status
rm -f "$WORK/biome.zst"
out=$WORK/biome.out biome CHURN_OUT="$WORK/biome.zst" LD_PRELOAD="$SHIM"
[ "$status" -eq "$native_status" ] || fail "biome exited with status $status under the shim, $native_status natively"
cmp -s "$WORK/biome-native.out" "$WORK/biome.out" || fail "biome's stdout changed under the shim"
grep -q 'Found 1000 errors' "$WORK/biome.out.kept" || fail "biome did not check the 1000 files: $(tail -n 3 "$WORK/biome.out.kept")"
cmp -s "$WORK/biome-native.out.kept" "$WORK/biome.out.kept" || fail "biome's stderr changed under the shim"
grep -q "likely culprit: the executable $BIOME, which calls mmap and is stripped (no .symtab), carrying jemalloc" "$WORK/biome.out.err" ||
    fail "biome: not reported blind with its jemalloc on stderr: $(grep libchurn "$WORK/biome.out.err" | head -n 2)"
analyze "$WORK/biome.zst" "$WORK/biome.json"
check "$WORK/biome.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
said = [w for w in field(report, "warnings") if "not traced" in w]
if not said or "likely in biome, which carries jemalloc" not in said[0]:
    fail("biome: no 'not traced' warning naming biome and its jemalloc: %r" % field(report, "warnings"))
untraced = max(r.get("untraced_bytes") or 0 for r in field(report, "fragmentation"))
if untraced < (8 << 20):
    fail("biome: untraced_bytes %d" % untraced)
print("biome: reported blind, about %.1f MiB not traced; %d allocations traced (glibc's)"
      % (untraced / 1048576.0, field(report, "totals", "allocs")))
PY
