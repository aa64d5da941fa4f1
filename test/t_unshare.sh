#!/bin/sh
# unshare(CLONE_NEWUSER) needs a single-threaded process (test/programs/unshare_user.c): under
# the shim the writer thread is stopped for the call and started again, so the call succeeds
# as it does natively and the allocations on both sides of it are in the trace.
. test/lib.sh

build_c unshare_user test/programs/unshare_user.c
"$WORK/unshare_user" >"$WORK/native.out" 2>&1 ||
    fail "unshare(CLONE_NEWUSER) fails even without the shim on this machine: $(tail -n 1 "$WORK/native.out")"
traced "$WORK/trace.zst" "$WORK/out" "$WORK/unshare_user"
analyze "$WORK/trace.zst" "$WORK/report.json"
check "$WORK/report.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
sizes = {}
for g in growth_with(report, "main"):
    for size in (64, 128):
        if g.get("live_bytes") == 50 * size and g.get("live_count") == 50:
            sizes[size] = True
if sorted(sizes) != [64, 128]:
    fail("the 50 blocks of 64 bytes before the unshare and of 128 after are not both in the trace")
expect("metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
print("unshare(CLONE_NEWUSER) succeeded under the shim; allocations before and after traced")
PY
