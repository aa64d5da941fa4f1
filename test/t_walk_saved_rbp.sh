#!/bin/sh
# The CFI walker reuses the previous walk's outer frames only when every word that walk read
# there is unchanged, the saved rbp words as well as the return addresses
# (shim/walk/cfi.c, memo_changed).  test/programs/stale_rbp.c makes two stacks that only a
# saved rbp tells apart; CHURN_UNWIND=verify compares every walk with libunwind's and aborts
# on the first difference.  A walker that checked only the return addresses puts a1 where
# a2 is on half the stacks.
. test/lib.sh

build_c stale_rbp test/programs/stale_rbp.c
# run twice, the second with one more frame outside (any argument): the saved rbp that tells
# the stacks apart comes at either parity of the walker's comparisons, two a round
for deeper in "" deeper; do
    label=stale_rbp${deeper:+ $deeper}
    CHURN_UNWIND=verify traced "$WORK/stale$deeper.zst" "$WORK/stale$deeper.out" \
        "$WORK/stale_rbp" $deeper
    grep -q "^4000 blocks" "$WORK/stale$deeper.out" ||
        fail "$label did not run its rounds: $(cat "$WORK/stale$deeper.out")"
    line=$(grep 'unwind verify: ' "$WORK/stale$deeper.out.err" | tail -n 1)
    [ -n "$line" ] || fail "$label: no 'unwind verify' summary on stderr"
    set -- $(echo "$line" | sed -n 's/.*verify: \([0-9]*\) stacks identical, \([0-9]*\) walked by cfi.*/\1 \2/p')
    [ $# -eq 2 ] || fail "$label: unreadable summary: $line"
    # the 4,000 allocations of m, each walked by the CFI walker itself
    [ "$1" -ge 4000 ] && [ "$2" -ge 4000 ] ||
        fail "$label: the CFI walker took $2 of $1 stacks, not m's 4,000"
    echo "$label: $1 stacks identical to libunwind's, $2 walked by the CFI walker"
done
