#!/bin/sh
# Epochs begun by the shim itself (test/programs/epoch_sources.c): CHURN_EPOCH_SIGNAL=USR2
# makes a raised SIGUSR2 begin an epoch that holds exactly the pattern made inside it, and
# CHURN_EPOCH_MS=5 slices a run into timed epochs whose figures add up exactly over the
# epochs a pattern touched (no event lost or counted twice at an asynchronous boundary).
. test/lib.sh

build_c epoch_sources test/programs/epoch_sources.c
CHURN_EPOCH_SIGNAL=USR2 traced "$WORK/signal.zst" "$WORK/signal.out" \
    "$WORK/epoch_sources" signal
analyze "$WORK/signal.zst" "$WORK/signal.json"
CHURN_EPOCH_MS=5 traced "$WORK/timer.zst" "$WORK/timer.out" "$WORK/epoch_sources" timer
analyze "$WORK/timer.zst" "$WORK/timer.json"

check "$WORK/signal.json" "$WORK/signal.out" "$WORK/timer.json" "$WORK/timer.out" <<'PY'
import sys
from churncheck import *

def ranges(path):
    return {w[1]: [int(x) for x in w[2:]] for w in
            (line.split() for line in open(path)) if w and w[0] == "range"}

signal, timer = load(sys.argv[1]), load(sys.argv[3])
first, _ = ranges(sys.argv[2])["signal"]
expect_epoch(signal, first, "begun by SIGUSR2", allocs=9, frees=9, alloc_bytes=9 * 333,
             free_bytes=9 * 333)

r = ranges(sys.argv[4])
first, last, n = r["timer"]
by_number = epochs(timer)
missing = [e for e in range(first, r["timer_frees"][1] + 1) if e not in by_number]
if missing:
    fail("timed epochs %s missing from the report" % missing)
def total(key, lo, hi):
    return sum(by_number[e][key] for e in range(lo, hi + 1))
expect("allocs over timed epochs %d..%d" % (first, last), total("allocs", first, last), n)
expect("alloc_bytes over timed epochs %d..%d" % (first, last),
       total("alloc_bytes", first, last), 64 * n)
expect("frees over timed epochs %d..%d" % (first, last), total("frees", first, last), 0)
lo, hi, n = r["timer_frees"]
expect("frees over timed epochs %d..%d" % (lo, hi), total("frees", lo, hi), n)
expect("free_bytes over timed epochs %d..%d" % (lo, hi), total("free_bytes", lo, hi), 64 * n)
print("signal epoch exact; %d allocs exact over timed epochs %d..%d" % (n, first, last))
PY
