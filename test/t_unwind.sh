#!/bin/sh
# The CFI stack walker (shim/walk/cfi.c) must give libunwind's answer on every stack.  In the test
# mode CHURN_UNWIND=verify the shim runs both on each allocation and aborts on the first
# difference, then prints how many stacks it compared and how many the CFI walker took alone
# (the rest fell back to libunwind).  Stacks: a program built three ways (-O0, -O2 with and
# without frame pointers) mixing plain, large, alloca'd and VLA frames, function pointers,
# qsort callbacks, a shared library without frame pointers, a dlclose/dlopen cycle and
# threads; then python3 (no frame pointers) on real workloads.  Also: CHURN_UNWIND=fp on
# python3 must not crash (its walk is bounded by the live stack); and where the CFI walker
# gives up (signal frames), libunwind reading only checked memory gives libunwind's own
# answer.
. test/lib.sh

command -v python3 >/dev/null || fail "python3 is required"
PY=/usr/bin/python3
[ -x "$PY" ] || fail "$PY is required"

gcc -O2 -g -fPIC -shared -fomit-frame-pointer -Wall -Wextra -Werror -o "$WORK/libunwind_lib.so" \
    test/programs/unwind_lib.c >"$WORK/lib.build.log" 2>&1 ||
    fail "cannot compile test/programs/unwind_lib.c: $(tail -n 1 "$WORK/lib.build.log")"

# verified ERRFILE MIN_STACKS LABEL: the verify summary must exist, cover at least MIN_STACKS
# stacks, and show the CFI walker taking at least 90% of them by itself (otherwise the
# comparison proved little about it).
verified() {
    line=$(grep 'unwind verify: ' "$1" | tail -n 1)
    [ -n "$line" ] || fail "$3: no 'unwind verify' summary on stderr"
    set -- $(echo "$line" | sed -n 's/.*verify: \([0-9]*\) stacks identical, \([0-9]*\) walked by cfi (\([0-9]*\) frames).*/\1 \2 \3/p') "$2" "$3"
    [ $# -eq 5 ] || fail "$5: unreadable summary: $line"
    [ "$1" -ge "$4" ] || fail "$5: only $1 stacks compared, expected at least $4"
    [ $(($2 * 10)) -ge $(($1 * 9)) ] || fail "$5: the CFI walker took only $2 of $1 stacks"
    [ "$3" -ge "$2" ] || fail "$5: the CFI walker's stacks hold only $3 frames"
    echo "$5: $1 stacks identical, $2 by the CFI walker, $3 frames"
}

for variant in O0 O2-nofp O2-fp; do
    case $variant in
    O0) flags="-O0" ;;
    O2-nofp) flags="-O2 -fomit-frame-pointer" ;;
    O2-fp) flags="-O2 -fno-omit-frame-pointer" ;;
    esac
    gcc $flags -g -Wall -Wextra -Werror -std=gnu11 -pthread -o "$WORK/shapes-$variant" \
        test/programs/unwind_shapes.c -ldl >"$WORK/shapes.build.log" 2>&1 ||
        fail "cannot compile test/programs/unwind_shapes.c $flags: $(tail -n 1 "$WORK/shapes.build.log")"
    # Full depth, so deep stacks are compared to their end; then the default depth, where both
    # walkers are cut short and must still agree.
    for depth in 256 64; do
        CHURN_UNWIND=verify CHURN_STACK_DEPTH=$depth traced "$WORK/shapes-$variant-$depth.zst" \
            "$WORK/shapes-$variant-$depth.out" "$WORK/shapes-$variant" "$WORK/libunwind_lib.so"
        verified "$WORK/shapes-$variant-$depth.out.err" 100000 "shapes $variant depth $depth"
    done
done

cat >"$WORK/workload.py" <<'EOF'
import json, re, sys, threading, decimal, collections

def churn(n):
    d = {}
    for i in range(n):
        k = "key%d" % (i % 5000)
        d[k] = ("value" * (i % 7)) + str(i)
        if i % 3 == 0:
            d.pop(k, None)
    return len(d)

def documents(n):
    out = 0
    for i in range(n):
        doc = {"id": i, "tags": ["t%d" % j for j in range(i % 9)], "v": decimal.Decimal(i) / 7}
        text = json.dumps(doc, default=str)
        out += len(json.loads(text)["tags"])
        out += len(re.findall(r"t\d", text))
    return out

class Node:
    def __init__(self, value, kids):
        self.value, self.kids = value, kids

def tree(depth):
    if depth == 0:
        return Node(0, [])
    return Node(depth, [tree(depth - 1) for _ in range(2)])

def deep(n):
    return deep(n - 1) + [n] if n else []

results = collections.Counter()
def worker(name):
    results[name] = churn(20000) + documents(2000)

threads = [threading.Thread(target=worker, args=("w%d" % i,)) for i in range(2)]
for t in threads:
    t.start()
total = churn(100000) + documents(5000) + len(tree(12).kids) + len(deep(300))
for t in threads:
    t.join()
print(total + sum(results.values()))
EOF
PYTHONMALLOC=malloc CHURN_UNWIND=verify traced "$WORK/py.zst" "$WORK/py.out" \
    "$PY" "$WORK/workload.py"
verified "$WORK/py.out.err" 200000 "python3 workload"

PYTHONMALLOC=malloc CHURN_UNWIND=verify CHURN_STACK_DEPTH=256 traced "$WORK/py256.zst" \
    "$WORK/py256.out" "$PY" -c 'import sys; sys.setrecursionlimit(5000)
def f(n): return f(n - 1) + [str(n)] if n else []
print(sum(len(f(400)) for _ in range(50)))'
verified "$WORK/py256.out.err" 20000 "python3 deep recursion"

# The frame-pointer walk meets python3's garbage rbp values: it must stay on the live stack.
PYTHONMALLOC=malloc CHURN_UNWIND=fp traced "$WORK/pyfp.zst" "$WORK/pyfp.out" \
    "$PY" "$WORK/workload.py"
cmp -s "$WORK/py.out" "$WORK/pyfp.out" || fail "python3 printed different results under CHURN_UNWIND=fp"

# Where the CFI walker gives up (signal frames: handlers that allocate, on the thread's own
# stack and on a 64 KiB sigaltstack, test/programs/sigaltstack_alloc.c), libunwind takes the
# stack reading only checked memory (shim/walk/unwind_checked.c): the same stacks as
# libunwind's own unwinder, which trusts the CFI, gives.
build_c sigaltstack_alloc test/programs/sigaltstack_alloc.c -pthread
for how in thread 65536; do
    CHURN_UNWIND=verify traced "$WORK/sig-$how.zst" "$WORK/sig-$how.out" \
        "$WORK/sigaltstack_alloc" $how 200
    line=$(grep 'unwind verify: ' "$WORK/sig-$how.out.err" | tail -n 1)
    alone=$(echo "$line" | sed -n 's/.* \([0-9]*\) by libunwind alone$/\1/p')
    [ -n "$alone" ] && [ "$alone" -ge 800 ] ||
        fail "signal frames ($how): the checked libunwind walk was compared on too few stacks: $line"
    echo "signal frames ($how): $line"
done

echo "PASS: the CFI walker agreed with libunwind on every stack"
