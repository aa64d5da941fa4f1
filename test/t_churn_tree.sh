#!/bin/sh
# A traced tree's index (shim/record/index.c, NAME.index beside the first trace): one start line per
# process image with its pid, parent, exec count, trace file, executable and command line,
# and an end line with how it ended; `churn analyze --list` lists it, `--pid` and `--exe`
# analyze the image named, `--tree` all of them (a combined summary whose totals are the sums
# of the images' figures, then each image's report); a shell script in front of the program
# (exec'ing it, or running it as a child; python3 run as installed, through pyenv's bash shims
# where present) leads to the program's own trace: the image that allocated most.
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
# The end line's command line is the one at the end (a program may retitle itself).
grep -qx "end$t$root${t}0${t}1${t}0$t$WORK/churn_tree tree two\\\\swords" "$WORK/tree.index" ||
    { cat "$WORK/tree.index"; fail "the first process's end line"; }
grep -qx "end$t$child${t}1${t}1${t}0$t$WORK/churn_tree leaf" "$WORK/tree.index" ||
    { cat "$WORK/tree.index"; fail "the leaf's end line"; }
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

# ---- --tree: a parent and four forked children with leaks of known, different sizes, one
# dying of SIGTERM, one killed by SIGKILL (CHURN_FLUSH_MS: its leak reaches the file before
# the kill) ----
CHURN_FLUSH_MS=20 "$CHURN" run -o "$WORK/forks.zst" "$WORK/churn_tree" forks >"$WORK/forks.out" \
    2>"$WORK/forks.err" || { cat "$WORK/forks.err"; fail "the forks run failed"; }
"$CHURN" analyze --tree --json "$WORK/forks.zst" >"$WORK/forks.json" 2>"$WORK/forks.json.err" ||
    { cat "$WORK/forks.json.err"; fail "churn analyze --tree --json failed"; }
"$CHURN" analyze --tree "$WORK/forks.index" >"$WORK/forks.txt" 2>"$WORK/forks.txt.err" ||
    { cat "$WORK/forks.txt.err"; fail "churn analyze --tree (text) failed"; }
"$ANALYZE" --tree --top 1 "$WORK/forks.zst" >"$WORK/forks1.txt" 2>/dev/null ||
    fail "churn-analyze --tree failed"
froot=$(sed -n 's/^pid //p' "$WORK/forks.out")
c0=$(sed -n 's/^child0 //p' "$WORK/forks.out")
c1=$(sed -n 's/^child1 //p' "$WORK/forks.out")
ck=$(sed -n 's/^child3 //p' "$WORK/forks.out")
cs=$(sed -n 's/^child2 //p' "$WORK/forks.out")
head -n 1 "$WORK/forks.txt" | grep -qx "Process tree: 5 process image(s), listed in $WORK/forks.index" ||
    fail "--tree text: $(head -n 1 "$WORK/forks.txt")"
grep -q "^  $c1 *$froot *_exit 7 " "$WORK/forks.txt" ||
    { cat "$WORK/forks.txt"; fail "--tree: child 1's row"; }
grep -q "^  $ck *$froot *killed " "$WORK/forks.txt" || fail "--tree: the killed child's row"
grep -q "^  $cs *$froot *signal 15 (TERM) " "$WORK/forks.txt" || fail "--tree: the SIGTERM child's row"
grep -qx "Grew most: pid $froot (.*churn_tree forks): +.* live at its end" "$WORK/forks.txt" ||
    fail "--tree: which process grew most: $(grep '^Grew' "$WORK/forks.txt")"
grep -qx "==== pid $c1 (parent $froot, _exit 7): $WORK/churn_tree forks" "$WORK/forks.txt" ||
    fail "--tree: no section for child 1"
grep -qx "  (the top 3 rows of each table; the whole report: churn-analyze $WORK/forks.$ck.zst)" \
    "$WORK/forks.txt" || fail "--tree does not say how to get the killed child's whole report"
[ "$(grep -c '^==== pid ' "$WORK/forks1.txt")" -eq 5 ] && grep -q "the top 1 rows" "$WORK/forks1.txt" ||
    fail "churn-analyze --tree --top 1: not 5 sections of 1 row"
status=0
"$CHURN" analyze --tree --pid "$c1" "$WORK/forks.zst" >/dev/null 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "--tree with --pid: status $status"
status=0
"$ANALYZE" --tree --html "$WORK/forks.zst" >/dev/null 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "--tree with --html: status $status"
status=0
"$ANALYZE" --tree "$WORK/forks.$c1.zst" >/dev/null 2>"$WORK/noidx.err" || status=$?
[ "$status" -eq 1 ] && [ "$(wc -l <"$WORK/noidx.err")" -eq 1 ] ||
    fail "--tree without an index: status $status, $(cat "$WORK/noidx.err")"

# ---- a wrapper script that runs python3 as its child (not exec), and sh -c 'exec python3' ----
printf '%s\n' '#!/bin/sh' 'echo wrapper up >&2' \
    "python3 -c 'x = [bytearray(100000) for _ in range(200)]'" 'status=$?' \
    'echo wrapper down >&2' 'exit $status' >"$WORK/pywrap"
chmod +x "$WORK/pywrap"
"$CHURN" run -o "$WORK/pw.zst" "$WORK/pywrap" >/dev/null 2>"$WORK/pw.err" ||
    { cat "$WORK/pw.err"; fail "churn run of the python wrapper failed"; }
pwpid=$(grep "^start$t[0-9]*$t[0-9]*${t}0$t$WORK/pw.zst$t" "$WORK/pw.index" | cut -f 2)
pwt=$(sed -n 's/^churn: trace in //p' "$WORK/pw.err")
grep -q "^start$t[^$t]*$t[^$t]*$t[^$t]*$t$pwt$t[^$t]*python3[^/$t]*$t" "$WORK/pw.index" ||
    { cat "$WORK/pw.err"; fail "churn run named $pwt, not python3's trace, behind a wrapper that runs it as a child"; }
grep -q "^churn: the image that allocated most is pid [0-9.]* ([0-9.]*MiB), not pid $pwpid that churn started (a script in front of the program?): .*python3" \
    "$WORK/pw.err" || { cat "$WORK/pw.err"; fail "churn did not say that python3, not the wrapper, allocated most"; }
grep -q "^churn: analyze it with: .* analyze $pwt$" "$WORK/pw.err" ||
    fail "no command to analyze python3's trace"
grep -q "^churn: the whole tree: .* analyze --tree $WORK/pw.index$" "$WORK/pw.err" ||
    fail "no command to analyze the tree"
"$CHURN" run -o "$WORK/px.zst" sh -c "exec python3 -c 'x = [bytearray(100000) for _ in range(200)]'" \
    >/dev/null 2>"$WORK/px.err" || { cat "$WORK/px.err"; fail "churn run sh -c 'exec python3' failed"; }
pxt=$(sed -n 's/^churn: trace in //p' "$WORK/px.err")
grep -q "^start$t[^$t]*$t[^$t]*$t[^$t]*$t$pxt$t[^$t]*python3[^/$t]*$t" "$WORK/px.index" ||
    { cat "$WORK/px.err"; fail "churn run named $pxt, not python3's trace, behind sh -c exec"; }
analyze "$pwt" "$WORK/pw.json"

# A command line with a newline in it (a python3 -c script) is one line of churn's list and
# of --tree's table, its newline written \n.
"$CHURN" run -o "$WORK/nl.zst" sh -c 'exec python3 -c "x = 1
y = [bytearray(100000) for _ in range(200)]"' >/dev/null 2>"$WORK/nl.err" ||
    { cat "$WORK/nl.err"; fail "churn run of a two-line python3 -c failed"; }
grep -q '^y = ' "$WORK/nl.err" &&
    { cat "$WORK/nl.err"; fail "churn's list of a command with a newline spans lines"; }
grep -q '^churn: .*python3 -c x = 1\\ny = ' "$WORK/nl.err" ||
    { cat "$WORK/nl.err"; fail "churn's list does not show the command's newline as a backslash and n"; }
"$ANALYZE" --tree "$WORK/nl.index" >"$WORK/nl.tree" 2>&1 || fail "--tree of the two-line command failed"
grep -q '^y = ' "$WORK/nl.tree" &&
    { cat "$WORK/nl.tree"; fail "--tree's table of a command with a newline spans lines"; }
grep -q 'python3 -c x = 1\\ny = ' "$WORK/nl.tree" ||
    { head -n 20 "$WORK/nl.tree"; fail "--tree's table does not show the command's newline as a backslash and n"; }

check "$WORK/pid.json" "$WORK/pid0.json" "$WORK/root.json" "$WORK/w.json" "$WORK/py.json" \
    "$WORK/forks.json" "$froot" "$c0" "$c1" "$ck" "$cs" "$WORK/pw.json" <<'PY'
import sys
from churncheck import *
leaf, child0, root, wrapped, py, forks = (load(p) for p in sys.argv[1:7])
froot, c0, c1, ck, cs = (int(p) for p in sys.argv[7:12])
pw = load(sys.argv[12])

# --tree --json: one process entry with its report per image, and the summary.
procs = {p["pid"]: p for p in forks["processes"]}
expect("--tree: processes", sorted(procs), sorted([froot, c0, c1, ck, cs]))
summary = forks["summary"]
images = {i["pid"]: i for i in summary["images"]}
for key in ("allocs", "alloc_bytes", "frees", "free_bytes", "live_at_exit_bytes",
            "live_at_exit_count", "growth_bytes"):
    expect("--tree: total %s is the sum of the images'" % key, summary["totals"][key],
           sum(i[key] for i in images.values()))
for pid in images:
    expect("--tree: pid %d's summary allocs are its report's" % pid, images[pid]["allocs"],
           field(procs[pid]["report"], "totals", "allocs"))
    expect("--tree: pid %d's live at exit, own and carried in, is its report's" % pid,
           images[pid]["live_at_exit_bytes"] + images[pid]["carried_live_at_exit_bytes"],
           field(procs[pid]["report"], "leaked_at_exit", "bytes"))
for pid, count, size in ((c0, 10, 1000), (c1, 20, 3000), (ck, 5, 500), (cs, 3, 700)):
    expect("--tree: child %d live at exit, objects" % pid, images[pid]["live_at_exit_count"], count)
    expect("--tree: child %d live at exit, bytes" % pid, images[pid]["live_at_exit_bytes"],
           count * size)
    expect("--tree: child %d allocated bytes" % pid, images[pid]["alloc_bytes"], count * size)
expect("--tree: the root's end", images[froot]["end"], "exit 0")
expect("--tree: child 0's end", images[c0]["end"], "_exit 0")
expect("--tree: child 1's end", images[c1]["end"], "_exit 7")
expect("--tree: the SIGTERM child's end", images[cs]["end"], "signal 15 (TERM)")
expect("--tree: the SIGTERM child's trace exit", images[cs]["trace_exit"], {"how": 3, "detail": 15})
expect("--tree: the SIGKILLed child's end", images[ck]["end"], "killed")
expect("--tree: the SIGKILLed child's trace has no exit", images[ck]["trace_exit"], None)
expect("--tree: the SIGKILLed child's report, exit",
       field(procs[ck]["report"], "metadata", "exit", "how"), "none")
if not any("no exit record" in w for w in field(procs[ck]["report"], "warnings")):
    fail("the SIGKILLed child's report does not say its trace has no exit record")
expect("--tree: killed images", summary["totals"]["killed"], 1)
expect("--tree: allocated most", summary["allocated_most"]["pid"], froot)
expect("--tree: grew most", summary["grew_most"]["pid"], froot)
if images[froot]["live_at_exit_bytes"] < 100 * 4242:
    fail("the root's live at exit is below its 100 blocks of 4242 bytes: %s" % images[froot])
big = [s for s in field(pw, "size_classes") if s["max_bytes"] >= 100000 and s["allocs"] >= 200]
if not big:
    fail("the trace churn named behind the wrapper holds no 200 allocations of 100000 bytes")

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
