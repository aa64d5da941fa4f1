#!/bin/sh
# No frame of libchurn in the program's stacks: eight threads started through the shim's
# pthread_create wrapper, whose call into libc stays on the stack of what libc allocates for
# the new thread (test/programs/threads.c), under each unwinder.  Checked in the trace itself
# (no recorded ip inside libchurn.so's module) and in the report (no frame named after it);
# the thread's memory is then allocated from libc's pthread_create, called from main.
. test/lib.sh

build_c threads test/programs/threads.c -pthread
for unwind in cfi fp libunwind; do
    CHURN_UNWIND=$unwind traced "$WORK/$unwind.zst" "$WORK/$unwind.out" "$WORK/threads"
    analyze "$WORK/$unwind.zst" "$WORK/$unwind.json"
    check "$WORK/$unwind.zst" "$WORK/$unwind.json" "$SHIM" "$unwind" <<'PY'
import os, sys
from churncheck import *
trace, report, shim, unwind = sys.argv[1], load(sys.argv[2]), os.path.realpath(sys.argv[3]), sys.argv[4]
recs = records(trace)
own = [(m["start"], m["end"]) for m in recs if m["tag"] == 0x02
       and os.path.realpath(m["path"].decode()) == shim]
if not own:
    fail("libchurn.so is not in the trace's module map")
stacks = [r for r in recs if r["tag"] == 0x03]
ips = 0
for s in stacks:
    ip = 0
    for i, d in enumerate(s["ips"]):
        ip += d
        ips += 1
        if any(lo <= ip < hi for lo, hi in own):
            fail("%s: stack %d frame %d (%#x) is inside libchurn.so" % (unwind, s["id"], i, ip))
frames = [f for g in field(report, "growth") for f in g["stack"]]
ours = [f for f in frames if "libchurn" in f or "(shim/" in f]
if ours:
    fail("%s: the report names libchurn's frames: %s" % (unwind, sorted(set(ours))))
# (frame pointers end at libc's first frame: glibc keeps none)
through = [g["stack"] for g in field(report, "growth")
           if any(f.startswith("__pthread_create") for f in g["stack"])]
if unwind != "fp" and not through:
    fail("%s: no stack through pthread_create: the test does not test" % unwind)
for st in through:
    at = [i for i, f in enumerate(st) if f.startswith("__pthread_create")][-1]
    if at + 1 >= len(st) or not st[at + 1].startswith("main ("):
        fail("%s: pthread_create's caller is not main: %s" % (unwind, st))
print("%s: %d stacks, %d frames, none in libchurn.so" % (unwind, len(stacks), ips))
PY
done
