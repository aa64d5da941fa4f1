#!/bin/sh
# unshare(CLONE_NEWUSER) needs a single-threaded process (test/programs/unshare_user.c): under
# the shim the writer thread is stopped for the call and started again, so the call succeeds
# as it does natively and the allocations on both sides of it are in the trace.
# Then three `unshare --pid --fork` children of one traced shell, each pid 1 in its own pid
# namespace (test/programs/ns_mark.c keeps 50 blocks of I * 1000 bytes): each writes a trace
# of its own, with the namespace in its name, and all three are there whole.
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

[ "$(id -u)" = 0 ] || fail "needs root for unshare --pid"
build_c ns_mark test/programs/ns_mark.c
mkdir -p "$WORK/ns"
env CHURN_OUT="$WORK/ns/t.zst" LD_PRELOAD="$SHIM" sh -c \
    'for i in 1 2 3; do unshare --pid --fork "$0" $i & done; wait' "$WORK/ns_mark" \
    >"$WORK/ns.out" 2>"$WORK/ns.err" || fail "the shell of unshare --pid children failed: $(tail -n 1 "$WORK/ns.err")"
[ "$(grep -c 'pid 1$' "$WORK/ns.out")" = 3 ] || fail "the three children were not pid 1: $(cat "$WORK/ns.out")"
! grep -q '^libchurn:' "$WORK/ns.err" || fail "libchurn said: $(grep '^libchurn:' "$WORK/ns.err" | head -n 1)"
for f in "$WORK"/ns/*.zst; do
    analyze "$f" "$f.json"
done
check "$WORK"/ns/*.zst.json <<'PY'
import sys
from churncheck import *
found = {}
for path in sys.argv[1:]:
    report = load(path)
    for g in growth_with(report, "main"):
        for i in (1, 2, 3):
            if g.get("live_count") == 50 and g.get("live_bytes") == 50 * i * 1000:
                found.setdefault(i, []).append(path)
for i in (1, 2, 3):
    if len(found.get(i, [])) != 1:
        fail("ns_mark %d's 50 blocks are in %d traces, not one: %s" % (i, len(found.get(i, [])), found.get(i)))
if len(set(p for ps in found.values() for p in ps)) != 3:
    fail("the three pid-1 children share traces: %s" % found)
print("three pid-1 children of unshare --pid: three traces of their own (%s)"
      % ", ".join(sorted(found[i][0].split("/")[-1][:-5] for i in (1, 2, 3))))
PY
