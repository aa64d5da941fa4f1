#!/bin/sh
# fork() from a signal handler that interrupted an allocation on the same thread
# (test/programs/fork_in_handler.c): the handler's fork may find libchurn's own locks, or the
# allocator's, held by the very code it interrupted.  Under CHURN_FORK=stop and follow the
# program never hangs and every child ends as natively; with follow each child either writes
# its own trace or says on stderr that it is not traced; the parent's trace is whole.  The same
# under CHURN_SAMPLE_BYTES, whose fast path calls the allocator with nothing recorded: the
# program never hangs, and the trace counts every allocation the program made.
. test/lib.sh

build_c fork_in_handler test/programs/fork_in_handler.c
"$WORK/fork_in_handler" >"$WORK/native.out" 2>&1 || fail "natively: $(tail -n 1 "$WORK/native.out")"

for mode in stop follow; do
    for run in 1 2; do
        dir=$WORK/$mode$run
        mkdir -p "$dir"
        status=0
        CHURN_FORK=$mode timeout 120 env CHURN_OUT="$dir/t.zst" LD_PRELOAD="$SHIM" \
            "$WORK/fork_in_handler" >"$dir/out" 2>"$dir/err" || status=$?
        [ "$status" -ne 124 ] || fail "CHURN_FORK=$mode run $run: hung (killed after 120 s)"
        [ "$status" -eq 0 ] ||
            fail "CHURN_FORK=$mode run $run: exit status $status: $(tail -n 1 "$dir/out") $(tail -n 1 "$dir/err")"
        analyze "$dir/t.zst" "$dir/t.json"
        check "$dir/t.json" "$dir/out" "$dir/err" "$mode" "$dir" <<'PY'
import os, re, sys
from churncheck import *
report, out, err, mode, d = load(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
lines = open(out).read().split("\n")
n = int(re.search(r"(\d+) allocations", open(out).read()).group(1))
allocs = sum(g["allocs"] for g in growth_with(report, "main"))
if allocs < n:
    fail("the parent's trace holds %d allocations of main, the program made %d" % (allocs, n))
expect("metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
kids = [int(l.split()[1]) for l in lines if l.startswith("child ")]
said = set(int(p) for p in re.findall(r"the child \(pid (\d+)\) is not traced", open(err).read()))
traced = set(int(f.split(".")[1]) for f in os.listdir(d) if re.match(r"t\.\d+\.zst$", f))
if mode == "stop":
    if traced:
        fail("CHURN_FORK=stop, yet children %s wrote traces" % sorted(traced))
else:
    for k in kids:
        if (k in traced) == (k in said):
            fail("child %d: %s" % (k, "a trace and a line saying it is not traced" if k in traced
                                   else "neither a trace nor a line saying it is not traced"))
print("%s: %d children ended as natively, %d traced, %d said untraced" %
      (mode, len(kids), len(traced), len(said)))
PY
    done
done

for run in 1 2; do
    dir=$WORK/sampled$run
    mkdir -p "$dir"
    status=0
    CHURN_FORK=stop CHURN_SAMPLE_BYTES=524288 timeout 120 env CHURN_OUT="$dir/t.zst" \
        LD_PRELOAD="$SHIM" "$WORK/fork_in_handler" >"$dir/out" 2>"$dir/err" || status=$?
    [ "$status" -ne 124 ] || fail "CHURN_SAMPLE_BYTES run $run: hung (killed after 120 s)"
    [ "$status" -eq 0 ] ||
        fail "CHURN_SAMPLE_BYTES run $run: exit status $status: $(tail -n 1 "$dir/out") $(tail -n 1 "$dir/err")"
    analyze "$dir/t.zst" "$dir/t.json"
    check "$dir/t.json" "$dir/out" <<'PY'
import re, sys
from churncheck import *
report, out = load(sys.argv[1]), open(sys.argv[2]).read()
n = int(re.search(r"(\d+) allocations", out).group(1))
if "60 forks, 0 bad" not in out:
    fail("sampled: %s" % out.strip().split("\n")[-1])
allocs = field(report, "totals", "allocs")
if allocs < n:
    fail("sampled: the trace counts %d allocations, the program made %d" % (allocs, n))
expect("metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
print("sampled: 60 children ended as natively, %d allocations counted of the program's %d" % (allocs, n))
PY
done
