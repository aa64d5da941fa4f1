#!/bin/sh
# A second `churn attach` to one process starts a trace that names its generated code anew:
# test/programs/attach_jit.c allocates through code its perf map names "jit_alloc", and in
# each of two traces (attach, 1.5 s, detach, twice) every stack with a frame in that code
# follows a CODE record covering the frame in the segments from its key segment on
# (docs/format.md), though the first trace named the code in segments of the same numbers
# (churn_writer_reset goes on counting segments: codemap.c's and pyframes.c's notes of a name
# written name segments of the old trace alone); and both reports name the frame jit_alloc.
. test/lib.sh
. test/attach_hold.sh

CHURN=$ROOT/build/churn
[ -x "$CHURN" ] || fail "build/churn is missing: run make"
build_c attach_jit test/programs/attach_jit.c -pthread
start jit "$WORK/attach_jit"
for n in 1 2; do
    timeout 60 "$CHURN" attach -o "$WORK/t$n.zst" "$PID" 2>"$WORK/t$n.attach" ||
        fail "attach $n: $(tail -n 1 "$WORK/t$n.attach")"
    sleep 1.5
    timeout 60 "$CHURN" detach "$PID" 2>"$WORK/t$n.detach" ||
        fail "detach $n: $(tail -n 1 "$WORK/t$n.detach")"
    analyze "$WORK/t$n.zst" "$WORK/t$n.json"
done
finish
[ "$STATUS" -eq 0 ] || fail "attach_jit exited with status $STATUS: $(tail -n 1 "$WORK/jit.err")"
grep -q "^allocations [1-9]" "$WORK/jit.out" || fail "attach_jit printed $(tail -n 1 "$WORK/jit.out")"
for n in 1 2; do
    check "$WORK/t$n.zst" "$WORK/t$n.json" $n <<'PY'
import sys
from churncheck import *
path, n = sys.argv[1], sys.argv[3]
delta = {h["seq"]: h["delta"] for h in segment_headers(path)}
code, key, frames, named = [], None, 0, 0
for r in records(path):
    if not delta[r["segment"]] and r["segment"] != key:
        key, code = r["segment"], []
    if r["tag"] == 0x80:
        code.append((r["start"], r["start"] + r["size"]))
    elif r["tag"] == 0x03:
        ip, ips = 0, []
        for d in r["ips"]:
            ip = (ip + d) & (1 << 64) - 1
            ips.append(ip)
        # the generated code's frame: the caller of jit_stub_malloc, in no module
        for ip in ips:
            if any(lo <= ip - 1 < hi for lo, hi in code):
                named += 1
        frames += 1
if not named:
    fail("trace %s: no stack of its %d has a frame that a CODE record since its key segment "
         "names" % (n, frames))
report = load(sys.argv[2])
if not any("jit_alloc" in f for g in field(report, "growth") for f in g["stack"]):
    fail("trace %s: no callsite's stack names jit_alloc" % n)
print("trace %s: %d frames of %d stacks named by CODE records, jit_alloc in the report"
      % (n, named, frames))
PY
done
echo PASS
