#!/bin/sh
# A traced process that execs (test/programs/exec_chain.c): the first image's trace keeps its
# events (also those after an exec that failed) and ends in an exec; the new image, same pid,
# writes NAME.<pid>.1.zst instead of replacing it, and a child it forks that execs writes
# NAME.<child>.1.zst.  Then a shell whose last command is exec'd
# (`sh -c '...; exec prog'`), the common case, keeps the shell's trace too.
. test/lib.sh

build_c exec_chain test/programs/exec_chain.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/exec_chain"
pid=$(sed -n 's/^pid //p' "$WORK/out")
[ -n "$pid" ] || fail "exec_chain printed no pid: the second image did not run"
[ -s "$WORK/trace.$pid.1.zst" ] || fail "the exec'd image wrote no trace.$pid.1.zst: $(ls "$WORK")"
child=$(sed -n 's/^child //p' "$WORK/out")
[ -s "$WORK/trace.$child.1.zst" ] ||
    fail "the forked child's exec'd image wrote no trace.$child.1.zst (its own first exec): $(ls "$WORK")"
analyze "$WORK/trace.zst" "$WORK/first.json"
analyze "$WORK/trace.$pid.1.zst" "$WORK/second.json"

# The shell's own trace must survive the program it execs.
rm -f "$WORK"/sh.*
CHURN_OUT="$WORK/sh.zst" LD_PRELOAD="$SHIM" sh -c "true; exec '$WORK/exec_chain' second" \
    >"$WORK/sh.out" 2>&1 || fail "sh -c '...; exec' failed under the shim: $(cat "$WORK/sh.out")"
shpid=$(sed -n 's/^pid //p' "$WORK/sh.out")
analyze "$WORK/sh.zst" "$WORK/sh.json"
analyze "$WORK/sh.$shpid.1.zst" "$WORK/sh.second.json"

check "$WORK/first.json" "$WORK/second.json" "$WORK/sh.json" "$WORK/sh.second.json" <<'PY'
import sys
from churncheck import *
first, second, sh, sh_second = (load(p) for p in sys.argv[1:5])

def live(report, function):
    return sum(g["live_count"] for g in growth_with(report, function))

expect("first image: exit", field(first, "metadata", "exit", "how"), "exec")
expect("first image: before_exec_alloc blocks live", live(first, "before_exec_alloc"), 11)
expect("first image: blocks after the failed exec", live(first, "after_failed_exec_alloc"), 7)
expect("first image: second_image_alloc blocks", live(first, "second_image_alloc"), 0)
expect("second image: exit", field(second, "metadata", "exit", "how"), "normal")
expect("second image: second_image_alloc blocks", live(second, "second_image_alloc"), 5)
expect("second image: before_exec_alloc blocks", live(second, "before_exec_alloc"), 0)
expect("shell: exit", field(sh, "metadata", "exit", "how"), "exec")
if not field(sh, "totals", "allocs"):
    fail("the shell's trace holds no allocation")
expect("program exec'd by the shell: second_image_alloc", live(sh_second, "second_image_alloc"), 5)
print("both images traced, each in its own file")
PY
