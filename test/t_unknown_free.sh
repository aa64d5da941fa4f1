#!/bin/sh
# Frees of pointers the shim never saw allocated (test/programs/unknown_free.c takes libc's
# malloc directly, behind the shim's back): the program survives, and the analyzer counts
# exactly those frees as unknown, compared with a control run that makes none.
. test/lib.sh

build_c unknown_free test/programs/unknown_free.c
traced "$WORK/control.zst" "$WORK/control.out" "$WORK/unknown_free" 0
traced "$WORK/unknown.zst" "$WORK/unknown.out" "$WORK/unknown_free" 5
analyze "$WORK/control.zst" "$WORK/control.json"
analyze "$WORK/unknown.zst" "$WORK/unknown.json"

check "$WORK/control.json" "$WORK/unknown.json" "$WORK/unknown.out" <<'PY'
import sys
from churncheck import *
control, report, ph = load(sys.argv[1]), load(sys.argv[2]), phases(sys.argv[3])
base = field(control, "totals", "unknown_frees")
got = field(report, "totals", "unknown_frees")
expect("unknown frees over the control run (5 frees + 1 realloc)", got - base, 6)
e = epoch(report, ph["unknown"], "frees of unseen blocks")
expect("allocs in the epoch (the realloc's new block)", e["allocs"], 1)
expect("alloc_bytes in the epoch", e["alloc_bytes"], 96)
print("6 unknown frees counted (control run: %d)" % base)
PY
