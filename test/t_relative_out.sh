#!/bin/sh
# A relative CHURN_OUT after the traced program changed directory
# (test/programs/chdir_fork.c, then a bash script): the traces of its forked children and of
# the programs it starts are written beside the root's, in the directory it started in; none
# lands in the directory it moved to.  bash imports its variables from main's envp and has its
# own setenv, so CHURN_OUT is made absolute in that array itself.
. test/lib.sh

build_c chdir_fork test/programs/chdir_fork.c
mkdir -p "$WORK/start/elsewhere" "$WORK/bash/elsewhere"
(cd "$WORK/start" && env CHURN_OUT=t.zst LD_PRELOAD="$SHIM" "$WORK/chdir_fork" elsewhere >"$WORK/out" 2>"$WORK/err") ||
    fail "chdir_fork failed under the shim: $(tail -n 1 "$WORK/err")"
child=$(sed -n 's/^child //p' "$WORK/out")
[ -s "$WORK/start/t.$child.zst" ] || fail "no trace t.$child.zst of the forked child beside the parent's"
moved=$(ls "$WORK/start/elsewhere")
[ -z "$moved" ] || fail "traces written where the program moved to: $moved"
analyze "$WORK/start/t.$child.zst" "$WORK/child.json"

(cd "$WORK/bash" && env CHURN_OUT=t.zst LD_PRELOAD="$SHIM" bash -c 'cd elsewhere && ls >/dev/null; echo "$CHURN_OUT"' >"$WORK/bash.out" 2>"$WORK/bash.err") ||
    fail "bash failed under the shim: $(tail -n 1 "$WORK/bash.err")"
moved=$(ls "$WORK/bash/elsewhere")
[ -z "$moved" ] || fail "bash: traces written where the script moved to: $moved"
[ "$(ls "$WORK/bash" | grep -c '^t\.[0-9]*\.zst$')" -ge 1 ] || fail "bash: no trace of ls beside the root's"
echo "children's and started programs' traces beside the root's after chdir (C program and bash)"
