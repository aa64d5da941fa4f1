#!/bin/sh
# fork while other threads are inside malloc and inside libchurn (test/programs/fork_threads.c:
# 100 forks while two threads churn): no child or parent hangs or crashes, with the children
# traced (CHURN_FORK=follow, each its own readable trace) and untraced (stop), and the parent's
# trace stays readable.
. test/lib.sh

build_c fork_threads test/programs/fork_threads.c -pthread
for mode in follow stop; do
    CHURN_FORK=$mode traced "$WORK/$mode.zst" "$WORK/$mode.out" "$WORK/fork_threads"
    grep -q "^forks 100$" "$WORK/$mode.out" || fail "$mode: the program did not finish its forks: $(cat "$WORK/$mode.out")"
    analyze "$WORK/$mode.zst" "$WORK/$mode.json"
    children=$(ls "$WORK"/$mode.*.zst 2>/dev/null | wc -l)
    if [ $mode = follow ]; then
        [ "$children" -eq 100 ] || fail "follow: $children child traces, expected 100"
        for c in "$WORK"/follow.*.zst; do
            "$ANALYZE" --json "$c" >"$WORK/child.json" 2>"$WORK/child.err" ||
                fail "follow: child trace $c unreadable: $(tail -n 1 "$WORK/child.err")"
        done
        check "$WORK/child.json" <<'PY'
import sys
from churncheck import *
r = load(sys.argv[1])
t = field(r, "totals")
if t["allocs"] < 2 or t["frees"] < 2:
    fail("the last child's trace has %d allocs, %d frees; it made 2 of each" % (t["allocs"], t["frees"]))
expect("the last child's exit recorded", field(r, "metadata", "exit", "how") in ("normal", "_exit"), True)
PY
    else
        [ "$children" -eq 0 ] || fail "stop: $children child traces written"
    fi
done
echo "fork under churning threads: 100 forks traced and 100 untraced, no hang"
