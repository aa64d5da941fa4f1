#!/bin/sh
# A perf map made by someone else before the program starts (test/programs/perfmap_hostile.c
# makes /tmp/perf-<pid>.map itself, as anyone on the machine could): a FIFO that nobody
# writes, a symlink to /dev/zero, a line of more than 64 KiB whose rest reads as an entry.
# libchurn's writer reads the map when a stack has a frame in generated code: the program
# must end as natively (a hang is killed by the timeout and fails), the trace hold every
# allocation and end with the exit, and only a regular file's whole lines name code: the
# generated frame is "real_code", never the long line's "bogus_code".
. test/lib.sh

build_c perfmap_hostile test/programs/perfmap_hostile.c
for mode in fifo zero long; do
    status=0
    timeout 120 env CHURN_OUT="$WORK/$mode.zst" LD_PRELOAD="$SHIM" \
        "$WORK/perfmap_hostile" "$mode" 20000 >"$WORK/$mode.out" 2>"$WORK/$mode.err" ||
        status=$?
    [ "$status" -eq 0 ] ||
        fail "$mode: exit status $status under the shim (124: still running after 120 s)"
    [ "$(cat "$WORK/$mode.out")" = "allocations 40000" ] ||
        fail "$mode: the program printed '$(cat "$WORK/$mode.out")'"
    analyze "$WORK/$mode.zst" "$WORK/$mode.json"
done

check "$WORK" <<'PY'
import os, sys
from churncheck import *
work = sys.argv[1]
for mode in ("fifo", "zero", "long"):
    report = load(os.path.join(work, mode + ".json"))
    expect(mode + ": metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
    direct = sum(g["allocs"] for g in field(report, "growth")
                 if g["stack"] and g["stack"][0].startswith("main "))
    generated = [g for g in field(report, "growth")
                 if g["stack"] and not g["stack"][0].startswith(("main ", "_", "jit_stub_malloc"))
                 and g["allocs"] >= 1000]
    expect(mode + ": allocations made directly", direct, 20000)
    expect(mode + ": allocations through generated code",
           sum(g["allocs"] for g in generated), 20000)
    names = sorted({g["stack"][0].split(" ")[0] for g in generated})
    if mode == "long":
        expect("long: the generated frame's name", names, ["real_code"])
    elif any(not n.startswith("0x") for n in names):
        fail("%s: the generated frame is named %r from a map that is not a file" % (mode, names))
print("a FIFO, a link to /dev/zero and a 64 KiB line as the perf map: the program as "
      "natively, every allocation traced, only whole lines of a regular file name code")
PY
