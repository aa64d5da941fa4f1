#!/bin/sh
# A traced tree's index (shim/index.c, NAME.index beside the first trace): one start line per
# process image with its pid, parent, exec count, trace file, executable and command line,
# and an end line with how it ended; `churn analyze --list` lists it, `--pid` and `--exe`
# analyze the image named; a shell script in front of the program (and python3 run as
# installed, through pyenv's bash shims where present) leads to the program's own trace.
. test/lib.sh

CHURN=$ROOT/build/churn
build_c churn_tree test/programs/churn_tree.c

"$CHURN" run -o "$WORK/tree.zst" "$WORK/churn_tree" tree 'two words' >"$WORK/tree.out" \
    2>"$WORK/tree.err" || { cat "$WORK/tree.err"; fail "the tree run failed"; }
root=$(sed -n 's/^pid //p' "$WORK/tree.out")
child=$(sed -n 's/^child //p' "$WORK/tree.out")
[ -s "$WORK/tree.index" ] || fail "no index beside the trace: $(ls "$WORK")"

# Every image, with its parent, file, executable, arguments (a space escaped) and end.
t=$(printf '\t')
grep -qx "start$t$root$t[0-9]*${t}0$t$WORK/tree.zst$t$WORK/churn_tree$t$WORK/churn_tree tree two\\\\swords" \
    "$WORK/tree.index" || { cat "$WORK/tree.index"; fail "the first process's start line"; }
grep -qx "start$t$child$t$root${t}0$t$WORK/tree.$child.zst$t$WORK/churn_tree$t.*" "$WORK/tree.index" ||
    { cat "$WORK/tree.index"; fail "the forked child's start line"; }
grep -qx "start$t$child$t$root${t}1$t$WORK/tree.$child.1.zst$t$WORK/churn_tree$t$WORK/churn_tree leaf" \
    "$WORK/tree.index" || { cat "$WORK/tree.index"; fail "the exec'd leaf's start line"; }
grep -qx "end$t$root${t}0${t}1${t}0" "$WORK/tree.index" || fail "the first process's end line"
grep -qx "end$t$child${t}1${t}1${t}0" "$WORK/tree.index" || fail "the leaf's end line"
[ "$(grep -c "^end$t$child${t}0$t" "$WORK/tree.index")" -eq 0 ] ||
    fail "the child's image before its exec has an end line (the exec ended it)"
[ "$(wc -l <"$WORK/tree.index")" -eq 5 ] || fail "the index has not 3 starts and 2 ends"

# A second run by the same name starts a new index.
"$CHURN" run -o "$WORK/tree.zst" "$WORK/churn_tree" exit 0 >/dev/null 2>&1 ||
    fail "the second run failed"
[ "$(grep -c '^start' "$WORK/tree.index")" -eq 1 ] || fail "the index kept the previous run's lines"
"$CHURN" run -o "$WORK/tree.zst" "$WORK/churn_tree" tree >"$WORK/tree.out" 2>"$WORK/tree.err" ||
    fail "the third run failed"
root=$(sed -n 's/^pid //p' "$WORK/tree.out")
child=$(sed -n 's/^child //p' "$WORK/tree.out")

# --list, --pid, --exe.
"$CHURN" analyze --list "$WORK/tree.zst" >"$WORK/list.out" || fail "churn analyze --list failed"
grep -q "^churn: 3 process image(s) in $WORK/tree.index:" "$WORK/list.out" ||
    fail "--list: $(head -n 1 "$WORK/list.out")"
grep -q "^churn:   $child\.1 *$root *exit .*churn_tree leaf (tree.$child.1.zst)$" "$WORK/list.out" ||
    { cat "$WORK/list.out"; fail "--list does not show the leaf"; }
grep -q "^churn:   $child *$root *exec " "$WORK/list.out" ||
    fail "--list does not show the child's image before its exec as ended by exec"
"$CHURN" analyze --pid "$child" --json "$WORK/tree.zst" >"$WORK/pid.json" 2>"$WORK/pid.err" ||
    fail "--pid $child: $(tail -n 1 "$WORK/pid.err")"
"$CHURN" analyze --json --pid="$child.0" "$WORK/tree.index" >"$WORK/pid0.json" 2>"$WORK/pid0.err" ||
    fail "--pid $child.0: $(tail -n 1 "$WORK/pid0.err")"
"$CHURN" analyze --json "$WORK/tree.index" >"$WORK/root.json" 2>/dev/null ||
    fail "the index as TRACE did not analyze the first process"
status=0
"$CHURN" analyze --exe churn_tree "$WORK/tree.zst" >/dev/null 2>"$WORK/exe.err" || status=$?
[ "$status" -eq 2 ] && grep -q "3 traced process images run churn_tree" "$WORK/exe.err" ||
    fail "an ambiguous --exe: status $status, $(head -n 1 "$WORK/exe.err")"
status=0
"$CHURN" analyze --pid 1 "$WORK/tree.zst" >/dev/null 2>"$WORK/nopid.err" || status=$?
[ "$status" -eq 2 ] || fail "--pid of no image: status $status"
status=0
"$CHURN" analyze --pid 1 "$WORK/tree.$child.1.zst" >/dev/null 2>"$WORK/noindex.err" || status=$?
[ "$status" -eq 2 ] && [ "$(wc -l <"$WORK/noindex.err")" -eq 1 ] ||
    { cat "$WORK/noindex.err"; fail "--pid without an index: status $status"; }

# A script in front of the program: churn names the program's own trace, --exe finds it.
cat >"$WORK/wrapper" <<EOF
#!/bin/sh
dir=\$(dirname "\$0")
test -x "\$dir/churn_tree"
exec "\$dir/churn_tree" "\$@"
EOF
chmod +x "$WORK/wrapper"
"$CHURN" run -o "$WORK/w.zst" "$WORK/wrapper" exit 0 >"$WORK/w.out" 2>"$WORK/w.err" ||
    { cat "$WORK/w.err"; fail "the wrapped run failed"; }
wpid=$(sed -n 's/^pid //p' "$WORK/w.out")
grep -q "^churn: pid $wpid exec'd 1 time(s) (a script in front of the program?); the trace below is of its last image, $WORK/churn_tree$" \
    "$WORK/w.err" || { cat "$WORK/w.err"; fail "churn did not say the program is behind a script"; }
grep -qx "churn: trace in $WORK/w.$wpid.1.zst" "$WORK/w.err" ||
    { cat "$WORK/w.err"; fail "churn did not name the program's own trace"; }
"$CHURN" analyze --exe churn_tree --json "$WORK/w.zst" >"$WORK/w.json" 2>"$WORK/w.json.err" ||
    fail "--exe churn_tree behind the script: $(tail -n 1 "$WORK/w.json.err")"

# python3 as the user runs it (pyenv's shims are bash scripts that exec the interpreter).
"$CHURN" run -o "$WORK/py.zst" python3 -c 'import sys; x = [bytearray(3001) for _ in range(500)]' \
    >/dev/null 2>"$WORK/py.err" || { cat "$WORK/py.err"; fail "churn run python3 failed"; }
py=$(sed -n 's/^churn: trace in //p' "$WORK/py.err")
[ -s "$py" ] || { cat "$WORK/py.err"; fail "churn run python3 named no trace"; }
grep -q "^start$t.*$t$py$t[^$t]*python3[^/$t]*$t" "$WORK/py.index" ||
    fail "the trace churn named for python3 ($py) is not a python executable's: $(grep "$py" "$WORK/py.index")"
analyze "$py" "$WORK/py.json"

check "$WORK/pid.json" "$WORK/pid0.json" "$WORK/root.json" "$WORK/w.json" "$WORK/py.json" <<'PY'
import sys
from churncheck import *
leaf, child0, root, wrapped, py = (load(p) for p in sys.argv[1:6])

def live(report, function):
    return sum(g["live_count"] for g in growth_with(report, function))

expect("--pid CHILD: leaf_alloc blocks", live(leaf, "leaf_alloc"), 37)
expect("--pid CHILD.0: the image before the exec", field(child0, "metadata", "exit", "how"), "exec")
expect("the index as TRACE: parent_alloc blocks", live(root, "parent_alloc"), 100)
expect("--exe behind the script: parent_alloc blocks", live(wrapped, "parent_alloc"), 100)
big = [s for s in field(py, "size_classes") if s["max_bytes"] >= 3001 and s["allocs"] >= 500]
if not big:
    fail("python3's own trace holds no 500 allocations of 3001+ bytes: %s" % field(py, "size_classes"))
print("the index names every image; churn analyze picks the one named")
PY
