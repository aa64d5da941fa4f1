#!/bin/sh
# Debian 12's command-line tools under LD_PRELOAD, each on a deterministic input, against
# valgrind's "total heap usage" of the same run (--run-libc-freeres=no: valgrind would
# otherwise free glibc's own buffers at exit, which no program run does):
#   jq 1.6, a stripped 9.5 KiB main around libjq: libchurn silent (it is no blind executable,
#     libjq's allocations are traced), and allocations, frees, bytes allocated and the bytes
#     and blocks in use at exit all equal valgrind's; its wrapper jv_mem_alloc is named "via"
#   gawk 5.2.1: within 10 calls and 0.01 % of bytes of valgrind's (ENVIRON copies the
#     environment, which each tool changes: valgrind adds three variables, libchurn two)
#   gcc 12's cc1 compiling a generated file of 300 functions at -O2 (about 2.1 million
#     allocations), behind setarch -R (cc1 hashes pointers), which allocates nothing and is
#     not said to be blind: within 0.01 % of heaptrack's "calls to allocation functions"
#     (less its own one) of the same run
# and the output and status unchanged.
. test/lib.sh

for pin in jq=1.6-2.1+deb12u1 libjq1=1.6-2.1+deb12u1 gawk=1:5.2.1-2 cpp-12=12.2.0-14+deb12u1 \
    valgrind=1:3.19.0-1 heaptrack=1.4.0-2; do
    pkg=${pin%%=*} want=${pin#*=}
    have=$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null) ||
        fail "$pkg is not installed (make check installs it)"
    [ "$have" = "$want" ] || fail "$pkg is $have, the comparisons were checked against $want"
done

python3 - "$WORK" <<'PY' || fail "cannot write the inputs"
import random, sys
random.seed(1)
with open(sys.argv[1] + "/data.json", "w") as f:
    f.write("[" + ",".join('{"id":%d,"name":"n%d","v":[%s]}' % (i, i, ",".join(
        str(random.randint(0, 999)) for _ in range(10))) for i in range(8000)) + "]")
with open(sys.argv[1] + "/data.txt", "w") as f:
    for i in range(10000):
        f.write("k%d %d %s\n" % (random.randint(0, 5000), i, "x" * random.randint(1, 30)))
with open(sys.argv[1] + "/gen.c", "w") as f:
    f.write("".join("struct s%d { int a, b; double c; char name[16]; };\n" % i for i in range(100)))
    for i in range(300):
        f.write("int f%d(struct s%d *p, int n) {\n  int acc = 0;\n  for (int i = 0; i < n; i++) {\n"
                "    switch ((i + %d) %% 7) {\n    case 0: acc += p->a * %d; break;\n"
                "    case 1: acc -= p->b + i; break;\n    case 2: acc ^= (int)(p->c * %d.5); break;\n"
                "    case 3: acc += p->name[i %% 16]; break;\n    default: acc += %d;\n    }\n  }\n"
                "  return acc;\n}\n" % (i, i % 100, random.randint(0, 99), random.randint(1, 9),
                                         random.randint(1, 9), i))
PY

# compare NAME TOLERANCE_CALLS TOLERANCE_BYTES CMD...
compare() {
    name=$1 calls=$2 bytes=$3
    shift 3
    valgrind --run-libc-freeres=no "$@" >"$WORK/$name.vg.out" 2>"$WORK/$name.vg.err" ||
        fail "$name under valgrind failed: $(tail -n 1 "$WORK/$name.vg.err")"
    traced "$WORK/$name.zst" "$WORK/$name.out" "$@"
    cmp -s "$WORK/$name.vg.out" "$WORK/$name.out" || fail "$name: output differs under libchurn"
    ! grep -q "libchurn:" "$WORK/$name.out.err" ||
        fail "$name: libchurn spoke on stderr: $(grep -m1 libchurn: "$WORK/$name.out.err")"
    analyze "$WORK/$name.zst" "$WORK/$name.json"
    check "$WORK/$name.json" "$WORK/$name.vg.err" "$name" "$calls" "$bytes" <<'PY'
import re, sys
from churncheck import *
report, vg, name = load(sys.argv[1]), open(sys.argv[2]).read(), sys.argv[3]
calls, share = int(sys.argv[4]), float(sys.argv[5])
num = lambda s: int(s.replace(",", ""))
usage = re.search(r"total heap usage: ([\d,]+) allocs, ([\d,]+) frees, ([\d,]+) bytes allocated", vg)
in_use = re.search(r"in use at exit: ([\d,]+) bytes in ([\d,]+) blocks", vg)
want = {"allocs": num(usage.group(1)), "frees": num(usage.group(2)), "bytes": num(usage.group(3)),
        "live bytes": num(in_use.group(1)), "live blocks": num(in_use.group(2))}
t = field(report, "totals")
got = {"allocs": t["allocs"], "frees": t["frees"], "bytes": t["alloc_bytes"],
       "live bytes": t["alloc_bytes"] - t["free_bytes"], "live blocks": t["allocs"] - t["frees"]}
for k in want:
    tolerance = calls if k in ("allocs", "frees", "live blocks") else share * want[k]
    if abs(got[k] - want[k]) > tolerance:
        fail("%s: %s %d, valgrind %d" % (name, k, got[k], want[k]))
print("%s: %s (valgrind %s)" % (name, got, want))
PY
}

compare jq 0 0 jq -c '[.[] | select(.id % 3 == 0) | {id, s: (.v | add)}] | length' "$WORK/data.json"
# libjq's allocation wrapper jv_mem_alloc is not a row of its own: its callers are, via it
check "$WORK/jq.json" <<'PY'
import sys
from churncheck import *
rows = field(load(sys.argv[1]), "functions")
names = [f["function"] for f in rows]
if "jv_mem_alloc" in names:
    fail("jq: the wrapper jv_mem_alloc is a function row")
via = [f for f in rows if f["via"] == "jv_mem_alloc"]
if len(via) < 5 or "jv_array_sized" not in [f["function"] for f in via]:
    fail("jq: rows via jv_mem_alloc: %s" % [f["function"] for f in via])
print("jq: %d function rows via jv_mem_alloc (jv_array_sized among them)" % len(via))
PY
compare gawk 10 0.0001 gawk '{c[$1] += length($3)} END {n = 0; for (k in c) n++; print n}' "$WORK/data.txt"

CC1=/usr/lib/gcc/x86_64-linux-gnu/12/cc1
setarch -R heaptrack -o "$WORK/cc1-ht" "$CC1" -quiet -O2 "$WORK/gen.c" -o "$WORK/gen-ht.s" \
    >"$WORK/cc1-ht.out" 2>&1 || fail "cc1 under heaptrack failed: $(tail -n 1 "$WORK/cc1-ht.out")"
heaptrack_print -f "$WORK"/cc1-ht.*zst >"$WORK/cc1-ht.txt" 2>&1 || fail "heaptrack_print failed on cc1's data"
traced "$WORK/cc1.zst" "$WORK/cc1.out" setarch -R "$CC1" -quiet -O2 "$WORK/gen.c" -o "$WORK/gen.s"
cmp -s "$WORK/gen.s" "$WORK/gen-ht.s" || fail "cc1's assembly differs under libchurn"
# setarch in front allocates nothing and has nowhere to hold memory: not said to be blind.  (cc1
# keeps its trees in garbage-collected pages it maps itself: in a run over 1.5 s the
# blind-spot detector rightly says so.)
! grep -q "calls no malloc through the PLT" "$WORK/cc1.out.err" ||
    fail "setarch said to carry an allocator: $(grep -m1 libchurn: "$WORK/cc1.out.err")"
# the image setarch execs, from the index beside the trace (docs/format.md)
image=$(awk -F '\t' '$1 == "start" && $6 ~ /\/cc1$/ {print $5}' "$WORK/cc1.index")
[ -s "$image" ] || fail "no trace of cc1 in $WORK/cc1.index: $(cat "$WORK/cc1.index")"
analyze "$image" "$WORK/cc1.json"
check "$WORK/cc1.json" "$WORK/cc1-ht.txt" <<'PY'
import re, sys
from churncheck import *
report = load(sys.argv[1])
ht = int(re.search(r"^calls to allocation functions: (\d+)", open(sys.argv[2]).read(), re.M).group(1)) - 1
allocs = field(report, "totals", "allocs")
if ht < 1000000 or abs(allocs - ht) > 0.0001 * ht:
    fail("cc1: %d allocations, heaptrack %d calls (less its own)" % (allocs, ht))
print("cc1: %d allocations (heaptrack %d)" % (allocs, ht))
PY
