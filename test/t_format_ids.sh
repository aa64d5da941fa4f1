#!/bin/sh
# Format 7 writes the stack ids of ALLOC_INFO, CARRY and EPOCH_END's callsites less the
# previous entry's (docs/format.md): the same trace written at versions 6 and 7 by the
# independent encoder (test/tools/mktrace.py), its first segment overwritten so that the
# analysis starts from a CARRY of three stacks (ids 2, 7 and 300 000: a jump, and a large
# id), its allocation infos on stacks 7, 2, 300 000 and 7 again, and its EPOCH_ENDs naming
# callsites out of order (300 000, 2, 7, then down to 2), gives the same report: live objects
# and bytes by callsite, per epoch, and every other figure.
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh

python3 - "$WORK" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
W = sys.argv[1]
BIG = 300000
stacks = [["stack", s, [0x401000 + s, 0x402000]] for s in (2, 7, BIG)]
carry = (3, 3 * 64 + 100, [[2, 1, 64], [7, 1, 64], [BIG, 1, 164]])
recs = mktrace.prelude(5, 3, carry) + stacks + [["thread", 1]]
for epoch in (3, 4):
    recs.append(["epoch", epoch])
    for i, s in enumerate((7, 2, BIG, 7)):
        recs.append(["alloc", 0, 0x10000000 + epoch * 0x1000 + i * 0x100, 32 << i, 0, s])
    recs.append(["free", 0, 0x10000000 + epoch * 0x1000, 32, 0, 7, 0])
    sites = [[BIG, 1, 0, 128, 0, 2, 292], [2, 1, 0, 64, 0, 1 + epoch - 2, 128],
             [7, 2, 1, 288, 32, 2, 320]]
    recs.append(["epoch_end", {"epoch": epoch, "allocs": 4, "frees": 1, "alloc_bytes": 480,
                               "free_bytes": 32, "callsites": sites if epoch == 3 else sites[::-1]}])
recs.append(["exit", 1, 0])
for version in (6, 7):
    open(os.path.join(W, "v%d" % version), "wb").write(mktrace.build(
        {"header": {"version": version},
         "segments": [{"seq": 5, "version": version, "first_epoch": 3, "last_epoch": 4,
                       "records": recs}]}))
PY

analyze "$WORK/v6" "$WORK/v6.json" --all-epochs
analyze "$WORK/v7" "$WORK/v7.json" --all-epochs
check "$WORK/v6.json" "$WORK/v7.json" <<'PY'
import sys
from churncheck import *
old, new = load(sys.argv[1]), load(sys.argv[2])
expect("format versions", (old["metadata"]["format_version"], new["metadata"]["format_version"]),
       (6, 7))
for r in (old, new):
    for k in ("format_version", "file_bytes", "ring_bytes", "trace"):
        r["metadata"].pop(k)
if old != new:
    keys = [k for k in old if old[k] != new.get(k)]
    fail("versions 6 and 7 of one trace give other reports: %s differ" % keys)
rows = {tuple(g["stack"])[0]: g["live_count"] for g in field(new, "growth")}
if len(rows) != 3:
    fail("the carried stacks are not three callsites: %s" % rows)
print("versions 6 and 7: the same report, callsites %s" % sorted(rows.items()))
PY
