#!/bin/sh
# A program that names the numbers libchurn keeps its descriptors at (test/programs/
# fd_takeover.c): for each of 992..1023, fcntl and close say EBADF as natively, a dup2 onto
# it works and so does the close after; then the same through raw system calls that libchurn
# cannot see.  The program's data file must hold its lines and nothing else, and the trace
# and its index be whole, nothing of the program's in them; also under CHURN_UNWIND=libunwind,
# where libunwind probes memory through its pipe (a frame without CFI) at numbers taken over.  And bash's `exec 995>file` (the
# number of the index, where libchurn starts it): the shell's data goes to its file, closing
# it works, and the index holds only its own lines.
. test/lib.sh

build_c fd_takeover test/programs/fd_takeover.c
"$WORK/fd_takeover" "$WORK/native.data" >"$WORK/native.out" 2>&1 ||
    fail "natively: $(tail -n 1 "$WORK/native.out")"
for unwind in cfi libunwind; do
    CHURN_UNWIND=$unwind CHURN_FLUSH_MS=10 CHURN_EPOCH_MS=1 \
        traced "$WORK/$unwind.zst" "$WORK/$unwind.out" "$WORK/fd_takeover" "$WORK/$unwind.data"
    cmp -s "$WORK/native.out" "$WORK/$unwind.out" ||
        fail "$unwind: under the shim it printed '$(tr '\n' ' ' <"$WORK/$unwind.out")', natively '$(tr '\n' ' ' <"$WORK/native.out")'"
    cmp -s "$WORK/native.data" "$WORK/$unwind.data" ||
        fail "$unwind: the program's data file differs from its native one"
    analyze "$WORK/$unwind.zst" "$WORK/$unwind.json"
done

mkdir -p "$WORK/bash"
status=0
(cd "$WORK/bash" && env CHURN_OUT="$WORK/bash/b.zst" LD_PRELOAD="$SHIM" bash -c \
    'exec 995>data.txt; echo "the shell'"'"'s line" >&995; exec 995>&- || exit 7; echo closed') \
    >"$WORK/bash.out" 2>"$WORK/bash.err" || status=$?
[ "$status" -eq 0 ] || fail "bash: exit status $status: $(tail -n 1 "$WORK/bash.err")"
grep -q '^closed$' "$WORK/bash.out" || fail "bash did not go on after closing 995"
[ "$(cat "$WORK/bash/data.txt")" = "the shell's line" ] ||
    fail "bash's data.txt holds '$(head -c 200 "$WORK/bash/data.txt")'"
analyze "$WORK/bash/b.zst" "$WORK/bash.json"

check "$WORK" <<'PY'
import os, sys
from churncheck import *
work = sys.argv[1]
n = int(open(os.path.join(work, "cfi.out")).read().split()[1])
for unwind in ("cfi", "libunwind"):
    report = load(os.path.join(work, unwind + ".json"))
    # the program's: from churn, or from no_cfi_malloc (whose caller is the walker's business)
    allocs = sum(g["allocs"] for g in field(report, "growth")
                 if any("churn" in f or "no_cfi_malloc" in f for f in g["stack"]))
    expect(unwind + ": allocations traced", allocs, n)
    expect(unwind + ": metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
for index in (os.path.join(work, "cfi.index"), os.path.join(work, "libunwind.index"),
              os.path.join(work, "bash", "b.index")):
    lines = open(index).read().splitlines()
    bad = [l for l in lines if l.split("\t")[0] not in ("start", "end")]
    if bad or not any(l.startswith("end\t") for l in lines):
        fail("%s holds %r" % (index, (bad or lines)[:2]))
print("fcntl, close and dup2 on libchurn's numbers as natively, raw takeovers seen; "
      "%d allocations traced, data file and index clean" % n)
PY
