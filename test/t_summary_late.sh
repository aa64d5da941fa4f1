#!/bin/sh
# The live figures of an epoch summary are compared with the events written before that
# EPOCH_END, the point the shim took them at.  A late event (drained after its epoch closed,
# counted in the shim's open epoch: docs/format.md) comes after the summary of its own epoch
# and of the empty epochs the writer closed meanwhile, and before the next epoch's first
# event: those epochs' live values per events (taken at that first event) hold it and their
# summaries rightly do not, which is no disagreement.  Two epochs like that (a late event two
# epochs behind, as four threads with an epoch every millisecond make), then the same trace
# with the summary of the epoch that counted the late event one object of 16 B off, which is.
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh

python3 - "$WORK" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
T = sys.argv[1]

def trace(off):
    recs = mktrace.prelude(0, 0) + [["stack", 1, [0x10]]]
    # epoch 0: thread 1 allocates A; thread 2 allocates B, pushed after epoch 0 and the
    # empty epoch 1 closed
    recs += [["thread", 1], ["epoch", 0], ["alloc", 0, 0x1000, 16, 0, 1]]
    recs.append(["epoch_end", {"epoch": 0, "allocs": 1, "alloc_bytes": 16,
                               "live_count": 1, "live_bytes": 16}])
    recs.append(["epoch_end", {"epoch": 1, "live_count": 1, "live_bytes": 16}])
    recs += [["thread", 2], ["epoch", 0], ["alloc", 0, 0x2000, 16, 0, 1]]
    # epoch 2: thread 1 allocates C; the shim counted B here, as late
    recs += [["thread", 1], ["epoch", 2], ["alloc", 0, 0x3000, 16, 0, 1]]
    recs.append(["epoch_end", {"epoch": 2, "allocs": 2, "alloc_bytes": 32, "late": 1,
                               "live_count": 3 + off, "live_bytes": 48 + 16 * off}])
    recs.append(["exit", 1, 0])
    return mktrace.build({"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": 2,
                                        "records": recs}]})

open(os.path.join(T, "late"), "wb").write(trace(0))
open(os.path.join(T, "off"), "wb").write(trace(1))
PY

for f in late off; do
    analyze "$WORK/$f" "$WORK/$f.json"
done

check "$WORK" <<'PY'
import os, sys
from churncheck import *
work = sys.argv[1]
late = load(os.path.join(work, "late.json"))
expect("late: epoch 0's allocations per events", epoch(late, 0)["allocs"], 2)
expect("late: epoch 0's live objects per events", epoch(late, 0)["live_count"], 2)
expect("late: epoch 1's live objects per events", epoch(late, 1)["live_count"], 2)
expect("late: warnings", field(late, "warnings"), [])
off = load(os.path.join(work, "off.json"))
expect("off: warnings", field(off, "warnings"),
       ["1 epoch summar(ies) whose live objects differ from the events written before them "
        "(first: epoch 2: summary 4 objects/64 B, events 3 objects/48 B, -1 objects/-16 B)"])
print("a late event two epochs behind: no warning; a summary one object off: %s"
      % field(off, "warnings")[0])
PY
