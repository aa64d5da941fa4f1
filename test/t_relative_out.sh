#!/bin/sh
# A relative CHURN_OUT after the traced program changed directory
# (test/programs/chdir_fork.c, then a bash script): the traces of its forked children and of
# the programs it starts are written beside the root's, in the directory it started in; none
# lands in the directory it moved to.  bash imports its variables from main's envp and has its
# own setenv, so CHURN_OUT is made absolute in that array itself.
# A CHURN_OUT of 4,095 characters leaves no room for children's names (NAME.<pid>.zst): it is
# refused at the start with one line in each process, which runs untraced; no trace appears (cut
# names of two children would be one name, each replacing the other's trace).
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

# 4,095 characters: directories of 200-character names, then a file name to make up the rest.
long="$WORK/long"
while [ ${#long} -lt 3800 ]; do
    long="$long/$(printf '%0200d' 0)"
done
mkdir -p "$long" || fail "cannot make the directories of a 4,095-character path"
name=$(printf '%0*d' $((4095 - ${#long} - 5)) 0).zst
status=0
(cd "$WORK/start" && env CHURN_OUT="$long/$name" LD_PRELOAD="$SHIM" "$WORK/chdir_fork" elsewhere \
    >"$WORK/long.out" 2>"$WORK/long.err") || status=$?
[ "$status" -eq 0 ] || fail "chdir_fork failed with a 4,095-character CHURN_OUT: $(tail -n 1 "$WORK/long.err")"
# chdir_fork starts programs of its own: each image preloading libchurn says it, once.
lines=$(grep -c '^libchurn:' "$WORK/long.err" || true)
refusals=$(grep -c '^libchurn: CHURN_OUT is 4095 characters.*not tracing$' "$WORK/long.err" || true)
[ "$lines" -ge 1 ] && [ "$lines" = "$refusals" ] ||
    fail "a 4,095-character CHURN_OUT: expected only lines refusing it, got: $(cat "$WORK/long.err")"
written=$(ls "$long")
[ -z "$written" ] || fail "traces written under a refused 4,095-character CHURN_OUT: $written"
echo "a 4,095-character CHURN_OUT: refused in one line by each of $lines processes, no trace, the program ran"
