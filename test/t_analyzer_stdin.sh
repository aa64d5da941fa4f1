#!/bin/sh
# `churn-analyze -` reads the trace from standard input, from a file or a pipe (spooled to a
# temporary file, which is gone afterwards): the same report as from the file, `-` as its
# name; bad input on standard input is one line and status 1, like a bad file.
# decoders: fast and slow
. test/lib.sh

build_c churn_tree test/programs/churn_tree.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/churn_tree" exit 0
mkdir -p "$WORK/tmp"
export TMPDIR="$WORK/tmp"

"$ANALYZE" --json "$WORK/trace.zst" >"$WORK/file.json" || fail "churn-analyze of the file failed"
"$ANALYZE" --json - <"$WORK/trace.zst" >"$WORK/redirect.json" 2>"$WORK/redirect.err" ||
    fail "churn-analyze --json - <trace failed: $(tail -n 1 "$WORK/redirect.err")"
cat "$WORK/trace.zst" | "$ANALYZE" --json - >"$WORK/pipe.json" 2>"$WORK/pipe.err" ||
    fail "cat trace | churn-analyze --json - failed: $(tail -n 1 "$WORK/pipe.err")"
cat "$WORK/trace.zst" | "$ROOT/build/churn" analyze - >"$WORK/pipe.txt" 2>&1 ||
    fail "cat trace | churn analyze - failed: $(tail -n 1 "$WORK/pipe.txt")"
grep -Eq "^churn-analyze [0-9.]*: -(, |$)" "$WORK/pipe.txt" ||
    fail "the text report does not name standard input as -: $(head -n 1 "$WORK/pipe.txt")"
[ -z "$(ls "$WORK/tmp")" ] || fail "temporary files left behind: $(ls "$WORK/tmp")"

for input in garbage empty; do
    case $input in
    garbage) printf 'not a trace at all, but long enough to have a header: %064d\n' 0 >"$WORK/in" ;;
    empty) : >"$WORK/in" ;;
    esac
    status=0
    cat "$WORK/in" | "$ANALYZE" - >"$WORK/bad.out" 2>"$WORK/bad.err" || status=$?
    [ "$status" -eq 1 ] || fail "$input on standard input: status $status, expected 1"
    [ "$(wc -l <"$WORK/bad.err")" -eq 1 ] && grep -q '^churn-analyze: -: ' "$WORK/bad.err" ||
        { cat "$WORK/bad.err"; fail "$input on standard input: not one line naming -"; }
done
[ -z "$(ls "$WORK/tmp")" ] || fail "temporary files left behind after bad input: $(ls "$WORK/tmp")"
status=0
TMPDIR="$WORK/no-such-dir" "$ANALYZE" - <"$WORK/trace.zst" >/dev/null 2>"$WORK/notmp.err" || status=$?
[ "$status" -eq 1 ] && [ "$(wc -l <"$WORK/notmp.err")" -eq 1 ] ||
    { cat "$WORK/notmp.err"; fail "no temporary directory: status $status"; }

check "$WORK/file.json" "$WORK/redirect.json" "$WORK/pipe.json" <<'PY'
import sys
from churncheck import *
file, redirect, pipe = (load(p) for p in sys.argv[1:4])
expect("name of standard input", field(pipe, "metadata", "trace"), "-")
name_of_file = field(file, "metadata", "trace")
for name, r in (("redirected", redirect), ("piped", pipe)):
    r["metadata"]["trace"] = name_of_file
    if r != file:
        diff = [k for k in file if file[k] != r.get(k)]
        fail("%s: the report differs from the file's in %s" % (name, diff))
expect("parent_alloc blocks from the pipe",
       sum(g["live_count"] for g in growth_with(pipe, "parent_alloc")), 100)
print("standard input analyzed like the file")
PY
