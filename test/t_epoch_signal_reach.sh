#!/bin/sh
# What CHURN_EPOCH_SIGNAL=USR2 does where the signal lands (test/programs/sigreach.c; README,
# "Epochs"): a traced process has libchurn's handler from its start and begins an epoch; a
# forked child inherits the handler, so it survives even when not traced (CHURN_FORK=stop);
# an exec'd image that is traced installs it again; an exec'd image that is not traced
# (LD_PRELOAD removed), like a process libchurn refused to trace (a bad option value), has
# the signal's default action and dies of it.  Under `churn run --epoch-signal USR2`, the
# signal sent to churn's own pid reaches the program and begins an epoch there.
. test/lib.sh

build_c sigreach test/programs/sigreach.c
export CHURN_EPOCH_SIGNAL=USR2

traced "$WORK/self.zst" "$WORK/self.out" "$WORK/sigreach" self
grep -qx "survived 3" "$WORK/self.out" || { cat "$WORK/self.out"; fail "traced"; }

CHURN_FORK=stop traced "$WORK/fork.zst" "$WORK/fork.out" "$WORK/sigreach" fork
grep -qx "child exit 0" "$WORK/fork.out" ||
    { cat "$WORK/fork.out"; fail "an untraced forked child should survive with the inherited handler"; }
[ -z "$(ls "$WORK" | grep '^fork\.[0-9]')" ] || fail "CHURN_FORK=stop still traced the child"

traced "$WORK/exec.zst" "$WORK/exec.out" "$WORK/sigreach" exec "$SHIM"
grep -qx "child exit 0" "$WORK/exec.out" ||
    { cat "$WORK/exec.out"; fail "a traced exec'd image should survive"; }
traced "$WORK/noexec.zst" "$WORK/noexec.out" "$WORK/sigreach" exec ""
grep -qx "child signal 12" "$WORK/noexec.out" ||
    { cat "$WORK/noexec.out"; fail "an untraced exec'd image should die of SIGUSR2 (default action)"; }

# The README's advice: a signal whose default action is to be ignored spares such an image.
CHURN_EPOCH_SIGNAL=WINCH traced "$WORK/winch.zst" "$WORK/winch.out" "$WORK/sigreach" exec ""
grep -qx "child exit 0" "$WORK/winch.out" ||
    { cat "$WORK/winch.out"; fail "with CHURN_EPOCH_SIGNAL=WINCH an untraced exec'd image should survive"; }

# A bad value of another option: libchurn does not trace, installs nothing, the default kills.
status=0
CHURN_RING_MB=0 CHURN_OUT="$WORK/bad.zst" LD_PRELOAD="$SHIM" "$WORK/sigreach" self \
    >"$WORK/bad.out" 2>"$WORK/bad.err" || status=$?
[ "$status" -eq $((128 + 12)) ] ||
    { cat "$WORK/bad.out"; fail "untraced after a bad value, SIGUSR2 should kill: status $status"; }
grep -q "CHURN_RING_MB" "$WORK/bad.err" || { cat "$WORK/bad.err"; fail "the bad value was not reported"; }

# churn run --epoch-signal: the signal sent to churn is the program's.
unset CHURN_EPOCH_SIGNAL
"$ROOT/build/churn" run -o "$WORK/run.zst" --epoch-signal USR2 "$WORK/sigreach" wait \
    >"$WORK/run.out" 2>"$WORK/run.err" &
churn_pid=$!
for _ in $(seq 1 300); do
    grep -q ready "$WORK/run.out" 2>/dev/null && break
    sleep 0.1
done
grep -q ready "$WORK/run.out" || { kill "$churn_pid"; fail "sigreach wait never became ready"; }
kill -USR2 "$churn_pid"
status=0
wait "$churn_pid" || status=$?
[ "$status" -eq 0 ] || { cat "$WORK/run.err"; fail "churn run ended with $status after USR2"; }
grep -qx "survived 1" "$WORK/run.out" ||
    { cat "$WORK/run.out"; fail "USR2 sent to churn did not begin one epoch in the program"; }
analyze "$WORK/run.zst" "$WORK/run.json"
check "$WORK/run.json" <<'PY'
import sys
from churncheck import *
r = load(sys.argv[1])
expect("last epoch of the churn run trace", field(r, "metadata", "last_epoch"), 1)
print("the epoch signal lands as documented")
PY
