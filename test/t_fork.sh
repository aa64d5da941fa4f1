#!/bin/sh
# fork (test/programs/fork.c): with CHURN_FORK=follow each child, whether it leaves through
# exit() or _exit(), writes its own trace named <out minus .zst>.<child pid>.zst holding its
# events and not the parent's, and the parent's trace holds none of the children's; with
# CHURN_FORK=stop the children write nothing and the parent's trace is unaffected.
. test/lib.sh

build_c fork test/programs/fork.c

CHURN_FORK=follow traced "$WORK/follow.zst" "$WORK/follow.out" "$WORK/fork" "$WORK"
analyze "$WORK/follow.zst" "$WORK/parent.json"
for c in 1 2; do
    pid=$(sed -n "s/^child $c //p" "$WORK/follow.out")
    [ -n "$pid" ] || fail "the fork program printed no pid for child $c"
    how=exit
    [ "$c" = 2 ] && how=_exit
    [ -f "$WORK/follow.$pid.zst" ] ||
        fail "child $c (pid $pid, leaves through $how) wrote no trace $WORK/follow.$pid.zst; files: $(ls "$WORK" | tr '\n' ' ')"
    analyze "$WORK/follow.$pid.zst" "$WORK/child$c.json"
    check "$WORK/child$c.json" "$WORK/child$c.out" "$c" "$how" <<'PY'
import sys
from churncheck import *
report, ph, child, how = load(sys.argv[1]), phases(sys.argv[2]), sys.argv[3], sys.argv[4]
what = "child %s leaving through %s" % (child, how)
expect_epoch(report, ph["child"], what, allocs=7, frees=5, alloc_bytes=7 * 321,
             free_bytes=5 * 321)
if any("parent_block" in f for g in field(report, "growth") for f in g["stack"]):
    fail("the trace of %s holds the parent's parent_block allocations" % what)
print("%s traced on its own" % what)
PY
done
check "$WORK/parent.json" "$WORK/follow.out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
expect_epoch(report, ph["parent"], "the parent after fork", allocs=11, frees=11,
             alloc_bytes=11 * 123, free_bytes=11 * 123)
if any("child_block" in f for g in field(report, "growth") for f in g["stack"]):
    fail("the parent's trace holds the children's child_block allocations")
print("parent traced without its children's events")
PY

rm -f "$WORK"/child*.out
CHURN_FORK=stop traced "$WORK/stop.zst" "$WORK/stop.out" "$WORK/fork" "$WORK"
for f in "$WORK"/stop.*.zst; do
    [ -e "$f" ] && fail "CHURN_FORK=stop, yet a child wrote $f"
done
[ -s "$WORK/child1.out" ] && [ -s "$WORK/child2.out" ] ||
    fail "with CHURN_FORK=stop the children did not complete"
analyze "$WORK/stop.zst" "$WORK/stop.json"
check "$WORK/stop.json" "$WORK/stop.out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
expect_epoch(report, ph["parent"], "the parent after fork with CHURN_FORK=stop", allocs=11,
             frees=11, alloc_bytes=11 * 123, free_bytes=11 * 123)
print("CHURN_FORK=stop: parent traced, children silent")
PY
