#!/bin/sh
# `churn run` as a user types it (test/programs/churn_tree.c): from another working directory
# and through an installed-style layout (PREFIX/bin/churn finds PREFIX/lib/libchurn.so, also
# through a symlink), the program's exit status and its death by signal passed through, an
# existing LD_PRELOAD kept after the shim, the trace named at the end with the command that
# analyzes it (which works), a fork/exec tree's files named, a shell script in front of the
# program (churn names the program's own trace), and bad usage as one line with status 2, -o
# (or CHURN_OUT) naming a directory, a FIFO, a symlink or a file in a missing directory
# included: then nothing is run and nothing named is changed; a file -o names that no trace
# replaced is not called one.
. test/lib.sh

CHURN=$ROOT/build/churn
[ -x "$CHURN" ] || fail "build/churn is missing: run make"
build_c churn_tree test/programs/churn_tree.c
build_c empty_lib test/programs/dl_lib.c -shared -fPIC

# ---- version: one string, from include/churn/version.h (also in the trace and the report) ----
want=$(sed -n 's/^#define CHURN_VERSION "\(.*\)"$/\1/p' include/churn/version.h)
[ -n "$want" ] || fail "include/churn/version.h defines no CHURN_VERSION"
[ "$("$CHURN" --version)" = "churn $want" ] || fail "churn --version: $("$CHURN" --version)"
[ "$("$ANALYZE" --version)" = "churn-analyze $want" ] ||
    fail "churn-analyze --version: $("$ANALYZE" --version)"
"$CHURN" help >"$WORK/help.out" || fail "churn help exited with $?"
grep -q -- '--epoch-signal SIG' "$WORK/help.out" || fail "churn help does not list --epoch-signal"
# --help after a command is what people type: the same help, not a usage error
for args in "--help" "-h" "run --help" "run -o x.zst -h" "attach --help" "detach --help"; do
    # shellcheck disable=SC2086
    "$CHURN" $args >"$WORK/help2.out" 2>"$WORK/help2.err" || fail "churn $args exited with $?"
    cmp -s "$WORK/help.out" "$WORK/help2.out" || fail "churn $args does not print churn help"
done

# ---- bad usage: exactly one line on stderr, status 2, nothing run ----
for args in "" "bogus" "run" "run --epoch-ms x true" "run --epoch-signal NOPE true" \
    "run --nope true" "help extra"; do
    status=0
    # shellcheck disable=SC2086
    "$CHURN" $args >"$WORK/usage.out" 2>"$WORK/usage.err" || status=$?
    [ "$status" -eq 2 ] || fail "churn $args: status $status, expected 2"
    [ "$(wc -l <"$WORK/usage.err")" -eq 1 ] ||
        { cat "$WORK/usage.err"; fail "churn $args: not one line on stderr"; }
    [ ! -s "$WORK/usage.out" ] || { cat "$WORK/usage.out"; fail "churn $args wrote to stdout"; }
done
status=0
(cd "$WORK" && CHURN_RING_MB=0 "$CHURN" run "$WORK/churn_tree" exit 0) >/dev/null 2>"$WORK/env.err" ||
    status=$?
[ "$status" -eq 2 ] && grep -q CHURN_RING_MB "$WORK/env.err" ||
    { cat "$WORK/env.err"; fail "a bad CHURN_RING_MB in the environment: status $status"; }
status=0
"$CHURN" run "$WORK/no-such-program" 2>"$WORK/nf.err" || status=$?
[ "$status" -eq 127 ] || fail "churn run of a missing program: status $status, expected 127"
[ "$(cat "$WORK/nf.err")" = "churn: cannot run $WORK/no-such-program: No such file or directory" ] ||
    fail "churn run of a missing program said: $(cat "$WORK/nf.err")"
status=0
"$CHURN" run "$WORK/" 2>"$WORK/dir.err" || status=$?
[ "$status" -eq 126 ] && [ "$(cat "$WORK/dir.err")" = "churn: cannot run $WORK/: Is a directory" ] ||
    fail "churn run of a directory: status $status, said: $(cat "$WORK/dir.err")"

# ---- -o (or CHURN_OUT) naming what cannot become a trace: one line, status 2, nothing run ----
mkdir -p "$WORK/odir"
mkfifo "$WORK/ofifo"
: >"$WORK/ofile"
ln -s "$WORK/ofile" "$WORK/olink"
ln -s "$WORK/nowhere" "$WORK/odangling"
for o in odir ofifo olink odangling nodir/t.zst odir/; do
    for how in option variable; do
        status=0
        if [ $how = option ]; then
            "$CHURN" run -o "$WORK/$o" sh -c ": >'$WORK/ran'" >"$WORK/o.out" 2>"$WORK/o.err" ||
                status=$?
        else
            CHURN_OUT="$WORK/$o" "$CHURN" run sh -c ": >'$WORK/ran'" >"$WORK/o.out" \
                2>"$WORK/o.err" || status=$?
        fi
        [ "$status" -eq 2 ] || { cat "$WORK/o.err"; fail "-o $o ($how): status $status, expected 2"; }
        [ "$(wc -l <"$WORK/o.err")" -eq 1 ] || { cat "$WORK/o.err"; fail "-o $o ($how): not one line"; }
        grep -q "^churn: run: $WORK/$o" "$WORK/o.err" ||
            fail "-o $o ($how) does not name it: $(cat "$WORK/o.err")"
        [ ! -e "$WORK/ran" ] || fail "-o $o ($how): the program ran"
    done
done
[ -d "$WORK/odir" ] && [ -p "$WORK/ofifo" ] && [ -L "$WORK/olink" ] && [ -f "$WORK/ofile" ] &&
    [ ! -s "$WORK/ofile" ] || fail "a refused -o changed what it named"
[ -z "$(ls "$WORK/odir")" ] || fail "a refused -o wrote into the directory: $(ls "$WORK/odir")"
# A file -o names that no trace replaced (the program is static: libchurn never ran in it) is
# not called a trace.
build_c churn_tree_static test/programs/churn_tree.c -static
echo "not a trace" >"$WORK/stale.zst"
"$CHURN" run -o "$WORK/stale.zst" "$WORK/churn_tree_static" exit 0 >/dev/null 2>"$WORK/stale.err" ||
    fail "churn run of a static program failed: $(cat "$WORK/stale.err")"
grep -q "^churn: no trace was written" "$WORK/stale.err" && ! grep -q "trace in" "$WORK/stale.err" ||
    { cat "$WORK/stale.err"; fail "churn called a file no trace replaced a trace"; }
[ "$(cat "$WORK/stale.zst")" = "not a trace" ] || fail "the file -o named changed"

# ---- from another working directory, an installed layout reached through a symlink ----
mkdir -p "$WORK/prefix/bin" "$WORK/prefix/lib" "$WORK/elsewhere/sub" "$WORK/links"
cp "$CHURN" "$ANALYZE" "$WORK/prefix/bin/"
cp "$SHIM" "$WORK/prefix/lib/"
ln -s "$WORK/prefix/bin/churn" "$WORK/links/churn"
cd "$WORK/elsewhere"
status=0
LD_PRELOAD="$WORK/empty_lib" "$WORK/links/churn" run -o sub/t.zst "$WORK/churn_tree" exit 7 \
    >"$WORK/run.out" 2>"$WORK/run.err" || status=$?
cd "$ROOT"
[ "$status" -eq 7 ] || { cat "$WORK/run.err"; fail "exit status 7 came back as $status"; }
grep -qx "preload $WORK/prefix/lib/libchurn.so $WORK/empty_lib" "$WORK/run.out" ||
    fail "LD_PRELOAD is not the installed shim then the user's: $(grep preload "$WORK/run.out")"
grep -qx "churn: trace in $WORK/elsewhere/sub/t.zst" "$WORK/run.err" ||
    { cat "$WORK/run.err"; fail "churn did not name the trace"; }
cmd=$(sed -n 's/^churn: analyze it with: //p' "$WORK/run.err")
[ "$cmd" = "$WORK/links/churn analyze $WORK/elsewhere/sub/t.zst" ] ||
    fail "the analyze command printed is '$cmd'"
(cd / && eval "$cmd --json") >"$WORK/run.json" 2>"$WORK/run.json.err" ||
    fail "the printed command failed: $(tail -n 1 "$WORK/run.json.err")"

# Default name: churn-<pid>.zst in the working directory.
status=0
(cd "$WORK/elsewhere" && "$CHURN" run "$WORK/churn_tree" exit 0) >"$WORK/def.out" \
    2>"$WORK/def.err" || status=$?
[ "$status" -eq 0 ] || fail "exit status 0 came back as $status"
pid=$(sed -n 's/^pid //p' "$WORK/def.out")
grep -qx "churn: trace in $WORK/elsewhere/churn-$pid.zst" "$WORK/def.err" ||
    { cat "$WORK/def.err"; fail "default name is not churn-$pid.zst in the working directory"; }
[ -s "$WORK/elsewhere/churn-$pid.zst" ] || fail "no $WORK/elsewhere/churn-$pid.zst"

# A program (not a script interpreter) whose child allocates more: churn names the child's
# trace as one of the processes it started, and asks about no script.
"$CHURN" run -o "$WORK/big.zst" "$WORK/churn_tree" bigtree >"$WORK/big.out" 2>"$WORK/big.err" ||
    { cat "$WORK/big.err"; fail "the bigtree run failed"; }
bpid=$(sed -n 's/^pid //p' "$WORK/big.out")
grep -q "^churn: the image that allocated most is pid [0-9.]* ([0-9.]*KiB), not pid $bpid that churn started (one of the processes it started): .*leaf 120" \
    "$WORK/big.err" || { cat "$WORK/big.err"; fail "churn did not name the child that allocated most"; }
! grep -q "script in front" "$WORK/big.err" ||
    { cat "$WORK/big.err"; fail "churn asked about a script in front of a program that is none"; }

# Run through a symlink of another name: the function rows name the program as it was run,
# its file in brackets (the index beside the trace has both).
ln -sf "$WORK/churn_tree" "$WORK/links/tree_alias"
"$CHURN" run -o "$WORK/alias.zst" "$WORK/links/tree_alias" exit 0 >"$WORK/alias.out" 2>"$WORK/alias.err" ||
    { cat "$WORK/alias.err"; fail "the run through a symlink failed"; }
"$ANALYZE" "$WORK/alias.zst" >"$WORK/alias.txt" 2>&1 || fail "churn-analyze alias.zst failed"
grep -q "^  #[0-9]* parent_alloc (tree_alias \[churn_tree\]): " "$WORK/alias.txt" ||
    { grep -A3 "Top functions" "$WORK/alias.txt"; fail "the function row does not name the program as it was run"; }
"$ANALYZE" --html "$WORK/alias.zst" -o "$WORK/alias.html" 2>/dev/null || fail "churn-analyze --html alias.zst failed"
grep -q "parent_alloc (tree_alias \[churn_tree\])</td>" "$WORK/alias.html" ||
    fail "the page's function row does not name the program as it was run"

# -o ../up.zst: the name printed and passed on is the resolved one, without its "..".
(cd "$WORK/elsewhere/sub" && "$CHURN" run -o ../up.zst "$WORK/churn_tree" exit 0) \
    >"$WORK/up.out" 2>"$WORK/up.err" || fail "churn run -o ../up.zst failed: $(tail -n 1 "$WORK/up.err")"
grep -qx "churn: trace in $WORK/elsewhere/up.zst" "$WORK/up.err" ||
    { cat "$WORK/up.err"; fail "-o ../up.zst is not named $WORK/elsewhere/up.zst"; }

# ---- a fork/exec tree: every file named, each the right image's ----
"$CHURN" run -o "$WORK/tree.zst" "$WORK/churn_tree" tree >"$WORK/tree.out" 2>"$WORK/tree.err" ||
    { cat "$WORK/tree.err"; fail "the tree run failed"; }
child=$(sed -n 's/^child //p' "$WORK/tree.out")
grep -qx "churn: trace in $WORK/tree.zst" "$WORK/tree.err" ||
    { cat "$WORK/tree.err"; fail "churn did not name the first process's trace"; }
grep -q "^churn: 3 process image(s) traced, listed in $WORK/tree.index:" "$WORK/tree.err" ||
    { cat "$WORK/tree.err"; fail "churn did not list the tree's 3 images"; }
for f in "tree.$child.zst" "tree.$child.1.zst"; do
    grep -q "^churn:   $child.* ($f)$" "$WORK/tree.err" ||
        { cat "$WORK/tree.err"; fail "churn did not name $f as pid $child's"; }
done
analyze "$WORK/tree.zst" "$WORK/tree.json"
analyze "$WORK/tree.$child.1.zst" "$WORK/leaf.json"

# ---- a shell script in front of the program (pyenv style) ----
cat >"$WORK/wrapper" <<EOF
#!/bin/sh
dir=\$(dirname "\$0")
exec "\$dir/churn_tree" "\$@"
EOF
chmod +x "$WORK/wrapper"
status=0
"$CHURN" run -o "$WORK/wrapped.zst" "$WORK/wrapper" exit 5 >"$WORK/wrapped.out" \
    2>"$WORK/wrapped.err" || status=$?
[ "$status" -eq 5 ] || fail "through the wrapper, exit status 5 came back as $status"
wpid=$(sed -n 's/^pid //p' "$WORK/wrapped.out")
grep -qx "churn: trace in $WORK/wrapped.$wpid.1.zst" "$WORK/wrapped.err" ||
    { cat "$WORK/wrapped.err"; fail "churn did not lead to the program's trace behind the script"; }
grep -q "^churn: analyze it with: .* analyze $WORK/wrapped.$wpid.1.zst$" "$WORK/wrapped.err" ||
    { cat "$WORK/wrapped.err"; fail "the analyze command is not for the program's own trace"; }
analyze "$WORK/wrapped.$wpid.1.zst" "$WORK/wrapped.json"

# ---- death by signal: churn dies of the same signal ----
check "$CHURN" "$WORK/churn_tree" "$WORK/sig" <<'PY'
import os, signal, subprocess, sys
from churncheck import *
churn, prog, out = sys.argv[1:4]
for sig in (signal.SIGTERM, signal.SIGSEGV, signal.SIGUSR2):
    p = subprocess.run([churn, "run", "-o", out + ".zst", prog, "signal", str(int(sig))],
                       capture_output=True, text=True)
    expect("churn's status when the program dies of %s" % sig.name, p.returncode, -int(sig))
    if ("killed by signal %d" % sig) not in p.stderr or "trace in" not in p.stderr:
        fail("churn did not report the death and the trace: %r" % p.stderr)
# A signal sent to churn itself goes to the program (which dies of it: default action).
p = subprocess.Popen([churn, "run", "-o", out + ".term.zst", "sleep", "30"],
                     stderr=subprocess.PIPE, text=True)
# Sent once churn's child runs sleep: churn forwards signals from before its fork, and a
# fixed pause would leave to the machine's load whether churn got that far.
import time
deadline = time.time() + 30
while True:
    kids = open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split()
    try:
        if kids and open("/proc/%s/comm" % kids[0]).read().strip() == "sleep":
            break
    except OSError:
        pass
    if time.time() > deadline:
        p.kill()
        fail("churn run sleep 30: no sleep child in 30 s")
    time.sleep(0.02)
p.send_signal(signal.SIGTERM)
err = p.communicate(timeout=20)[1]
expect("churn's status after TERM sent to churn", p.returncode, -int(signal.SIGTERM))
if "killed by signal 15" not in err:
    fail("TERM sent to churn did not reach the program: %r" % err)
print("signal deaths passed through")
PY

check "$WORK/run.json" "$WORK/tree.json" "$WORK/leaf.json" "$WORK/wrapped.json" "$want" <<'PY'
import sys
from churncheck import *
run, tree, leaf, wrapped = (load(p) for p in sys.argv[1:5])
version = sys.argv[5]
expect("the report's analyzer version", field(run, "metadata", "analyzer_version"), version)
expect("the trace's libchurn version", field(run, "metadata", "libchurn_version"), version)

def live(report, function):
    return sum(g["live_count"] for g in growth_with(report, function))

expect("run from elsewhere: parent_alloc blocks", live(run, "parent_alloc"), 100)
expect("tree: parent_alloc blocks", live(tree, "parent_alloc"), 100)
expect("tree: leaf_alloc in the parent's file", live(tree, "leaf_alloc"), 0)
expect("leaf: leaf_alloc blocks", live(leaf, "leaf_alloc"), 37)
expect("leaf: exit", field(leaf, "metadata", "exit", "how"), "normal")
expect("behind the script: parent_alloc blocks", live(wrapped, "parent_alloc"), 100)
print("churn run: every image traced, named and analyzable")
PY
