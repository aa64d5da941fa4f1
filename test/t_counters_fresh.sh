#!/bin/sh
# Epochs that end faster than the writer reads the allocator's counters
# (test/programs/fast_epochs.c: 1500 epochs begun by SIGUSR2 microseconds apart, one more live
# object in each): an epoch is given a reading only if it was taken after the epoch ended and
# before the next one did, so each reading not marked stale counts that epoch's heap, give or
# take the next epoch's one object; every other epoch is counters_stale, and the warnings count
# them all, the exit's epoch apart.
. test/lib.sh

build_c fast_epochs test/programs/fast_epochs.c
rm -f "$WORK/trace.zst"
CHURN_EPOCH_SIGNAL=USR2 CHURN_OUT="$WORK/trace.zst" LD_PRELOAD="$SHIM" "$WORK/fast_epochs" \
    >"$WORK/out" 2>&1 || fail "fast_epochs failed: $(tail -n 1 "$WORK/out")"
analyze "$WORK/trace.zst" "$WORK/report.json"

check "$WORK/report.json" <<'PY'
import re, sys
from churncheck import *
report = load(sys.argv[1])
epochs = field(report, "epochs")
expect("epochs", len(epochs), 1501)
fresh = [e for e in epochs[:-1] if not field(e, "counters_stale")]
# A reading is epoch e's only if it was taken after e ended and before e + 1 did: the heap in
# use then holds the objects of epochs 0..e, and perhaps e + 1's (made before the epoch ends).
# So uordblks - (e + 1) chunks is the same base for every fresh epoch, give or take one chunk;
# a reading that belongs to another epoch is off by more.
CHUNK = 1008  # malloc(1000)'s chunk
offsets = [field(e, "counters")["mallinfo2.uordblks"] - (e["epoch"] + 1) * CHUNK for e in fresh]
if offsets and max(offsets) - min(offsets) > CHUNK:
    lo = min(range(len(fresh)), key=lambda i: offsets[i])
    hi = max(range(len(fresh)), key=lambda i: offsets[i])
    fail("epochs %d and %d are given readings %d B apart from their own heaps: one is another "
         "epoch's" % (fresh[lo]["epoch"], fresh[hi]["epoch"], offsets[hi] - offsets[lo]))
# at most one reading a millisecond over a run of well under a second
if len(fresh) > 300:
    fail("%d epochs have a reading of their own: more than the writer can take" % len(fresh))
stale = [e for e in epochs[:-1] if e["counters_stale"]]  # the last: the exit's
counted = 0
for w in field(report, "warnings"):
    m = re.match(r"allocator counters not read at the end of (\d+) epoch", w) or \
        re.match(r"allocator counters of (\d+) epoch\(s\) read after a later epoch", w)
    if m:
        counted += int(m.group(1))
expect("stale epochs the warnings count", counted, len(stale))
for w in field(report, "warnings"):
    if "read when the writer closed the epoch" in w:
        fail("books called stale by their contents, not by the shim's record: %s" % w)
print("%d epochs with a reading of their own, %d stale" % (len(fresh), len(stale)))
PY

# Epochs paced a few milliseconds apart, as requests are: the writer is woken to read the
# counters after each one ends (at most every 2 ms), rather than an idle writer's 50 ms
# between looks giving most of them a later epoch's reading.
rm -f "$WORK/paced.zst"
CHURN_EPOCH_SIGNAL=USR2 CHURN_OUT="$WORK/paced.zst" LD_PRELOAD="$SHIM" "$WORK/fast_epochs" paced \
    >"$WORK/paced.out" 2>&1 || fail "fast_epochs paced failed: $(tail -n 1 "$WORK/paced.out")"
analyze "$WORK/paced.zst" "$WORK/paced.json"
check "$WORK/paced.json" <<'PY'
import sys
from churncheck import *
epochs = field(load(sys.argv[1]), "epochs")
expect("paced epochs", len(epochs), 101)
fresh = [e for e in epochs[:-1] if not field(e, "counters_stale")]
if len(fresh) < 95:
    fail("only %d of 100 epochs 5 ms long have a reading of their own" % len(fresh))
print("paced: %d of 100 epochs with a reading of their own" % len(fresh))
PY
