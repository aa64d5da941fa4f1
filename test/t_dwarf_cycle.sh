#!/bin/sh
# DWARF whose DIE references form cycles (test/programs/dwarf_cycle.s: abstract_origin and
# specification chains that come back to where they started, a function whose name is asked
# of the function around its own declaration) or a chain 5,000 deep: every output mode reads
# it in bounded stack and time, and names each function as far as the cycle lets it (its
# symbol otherwise), a name of nested scopes with at most 16 of them named.
LIB_ANALYZER_ONLY=1
. test/lib.sh
T=$WORK

gcc -shared -nostdlib -Wl,--build-id -o "$T/libcycle.so" test/programs/dwarf_cycle.s \
    >"$T/build.log" 2>&1 || fail "cannot build libcycle.so: $(tail -n 1 "$T/build.log")"
id=$(readelf -n "$T/libcycle.so" | awk '/Build ID/ { print $3 }')
[ -n "$id" ] || fail "libcycle.so has no build id"
nm "$T/libcycle.so" | awk '$3 ~ /^cyc_/ { print $3, $1 }' >"$T/functions"
[ "$(wc -l <"$T/functions")" = 5 ] || fail "libcycle.so: not 5 cyc_ functions: $(cat "$T/functions")"

python3 - "$T" "$id" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
T, build_id = sys.argv[1:]
B = 0x7f0000000000
recs = mktrace.prelude(0, 0, modules=[(0, B, B, B + 0x10000, build_id,
                                       os.path.join(T, "libcycle.so"))])
functions = [l.split() for l in open(os.path.join(T, "functions"))]
# a return address 6 bytes into each (inside cyc_outer's inlined call)
recs += [["stack", k + 1, [B + int(off, 16) + 6]] for k, (name, off) in enumerate(functions)]
recs += [["thread", 1], ["epoch", 0]]
recs += [["alloc", 0, 0x100000 + 64 * k, 32, 0, k + 1] for k in range(len(functions))]
recs.append(["exit", 1, 0])
open(os.path.join(T, "cycle.zst"), "wb").write(
    mktrace.build({"segments": [{"seq": 0, "records": recs}]}))
# an index beside it, for --tree
open(os.path.join(T, "cycle.index"), "w").write(
    "start\t4242\t1\t0\t%s\t/bin/true\ttrue\n" % os.path.join(T, "cycle.zst"))
PY

# mode NAME OPTION...: the analyzer in that mode exits 0 within 20 s of CPU and 1 GB of
# address space (an unbounded recursion dies of its stack, a loop at the time limit).
mode() {
    name=$1
    shift
    status=0
    (
        ulimit -t 20
        ulimit -v 1000000
        exec "$ANALYZE" "$@" "$T/cycle.zst"
    ) >"$T/$name.out" 2>"$T/$name.err" || status=$?
    [ "$status" = 0 ] || fail "$name: exit status $status: $(tail -n 1 "$T/$name.err")"
    [ -s "$T/$name.out" ] || fail "$name: no output"
}
mode text
mode json --json
mode folded --folded
mode svg --svg
mode html --html
mode pprof --pprof
mode tree --tree
mode tree_json --tree --json

check "$T" <<'PY'
import json, sys
T = sys.argv[1]
d = json.load(open(T + "/json.out"))
stacks = [c["stack"] for c in d["growth"]]
names = sorted(s[-1].split(" (")[0] for s in stacks)
# cyc_nested's DWARF name is "f" in a scope whose own name leads back to f (not known);
# cyc_chain's "g" in 16 scopes named "g" and an outer one not named; the others are named by
# their symbols, cyc_outer with its inlined frame unnamed
want = sorted(["?::f", "?" + "::g" * 16, "cyc_outer", "cyc_self", "cyc_spec"])
if names != want:
    sys.exit("FAIL: functions %s, want %s (stacks %s)" % (names, want, stacks))
outer = [s for s in stacks if s[-1].startswith("cyc_outer")][0]
if len(outer) != 2 or not outer[0].startswith("libcycle.so+0x"):
    sys.exit("FAIL: cyc_outer's inlined frame: %s" % outer)
folded = open(T + "/folded.out").read()
for n in want:
    if n not in folded:
        sys.exit("FAIL: --folded does not name %s: %s" % (n, folded))
PY
echo "PASS: t_dwarf_cycle"
