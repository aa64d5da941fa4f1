#!/bin/sh
# A traced program that uses capstone itself (test/programs/own_capstone.c, linked with
# libcapstone.so.4): libchurn's decoder is its own copy (shim/ways/capstone_x86.c), so the
# arena libchurn gives its decoder is not the program's.  The program's cs_disasm takes its
# instruction arrays from malloc as natively, and every one is traced; libchurn.so does not
# load libcapstone.so at all, whose relocation would cost every traced program's start-up.
. test/lib.sh

rounds=2000
if readelf -d "$SHIM" | grep -q 'NEEDED.*libcapstone'; then
    fail "$SHIM needs libcapstone.so: its relocation would weigh on every traced start-up"
fi
exported=$(nm -D --defined-only "$SHIM" | grep -c ' cs_' || true)
[ "$exported" -eq 0 ] || fail "$SHIM exports $exported of capstone's cs_* functions"

build_c own_capstone test/programs/own_capstone.c -lcapstone
"$WORK/own_capstone" $rounds >"$WORK/native.out" 2>&1 || fail "natively: $(tail -n 1 "$WORK/native.out")"
traced "$WORK/t.zst" "$WORK/t.out" "$WORK/own_capstone" $rounds
cmp -s "$WORK/native.out" "$WORK/t.out" ||
    fail "under the shim it printed '$(cat "$WORK/t.out")', natively '$(cat "$WORK/native.out")'"
analyze "$WORK/t.zst" "$WORK/t.json"
check "$WORK/t.json" "$rounds" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
rounds = int(sys.argv[2])
allocs = sum(g["allocs"] for g in growth_with(report, "cs_disasm"))
if allocs < rounds:
    fail("%d allocations of cs_disasm in the trace, the program made at least %d"
         % (allocs, rounds))
print("the program's own capstone: %d allocations of cs_disasm traced in %d rounds"
      % (allocs, rounds))
PY
