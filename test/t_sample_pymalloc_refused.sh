#!/bin/sh
# A failed allocation through pymalloc's hooks is not counted under CHURN_SAMPLE_BYTES (the
# fast path of shim/ways/way_pymalloc.c counts an allocation before pymalloc's call and takes
# it back when the call fails).  test/programs/py_refused.py asks 2,000 times for 100,033
# bytes through PyObject_Malloc and PyObject_Calloc, which pymalloc hands to malloc and
# calloc, and test/programs/malloc_refuses.c, preloaded after libchurn, refuses them all.
# Under Debian's python3.11 and pyenv's 3.11.7 (a machine without it says NOT RUN for it),
# traced in full and sampled at 1 TiB (every call but the thread's first on the fast path):
# the program prints the same, all 4,000 failed; the sampled totals of allocations and frees
# equal the full trace's (which records no failed allocation), the bytes within 256 (both
# runs in one address layout, fixed_layout in test/lib.sh: what the interpreter asks for
# varies by a few bytes, t_sample_python.sh says why, and by no step of 1,000).
. test/lib.sh

fixed_layout
pythons_311

build_c malloc_refuses.so test/programs/malloc_refuses.c -shared -fPIC
CHURN_PRELOAD_EXTRA=$WORK/malloc_refuses.so
export CHURN_PRELOAD_EXTRA

i=0
for py in $pythons; do
    i=$((i + 1))
    # (the same length of CHURN_SAMPLE_BYTES in both: the same start-up allocations)
    for n in 0000000000000 1099511627776; do
        PYTHONHASHSEED=0 MALLOC_REFUSES=100033 CHURN_SAMPLE_BYTES=$n traced \
            "$WORK/py$i.$n.zst" "$WORK/py$i.$n.out" "$py" test/programs/py_refused.py 2000
        [ "$(cat "$WORK/py$i.$n.out")" = "4000 0" ] ||
            fail "$py at CHURN_SAMPLE_BYTES=$n printed $(cat "$WORK/py$i.$n.out"), not 4000 0"
        analyze "$WORK/py$i.$n.zst" "$WORK/py$i.$n.json"
    done
    check "$WORK/py$i" "$py" <<'PY'
import sys
from churncheck import *
base, name = sys.argv[1], sys.argv[2]
ft = field(load(base + ".0000000000000.json"), "totals")
st = field(load(base + ".1099511627776.json"), "totals")
label = "%s at CHURN_SAMPLE_BYTES=1 TiB" % name
expect(label + ": totals.allocs", st["allocs"], ft["allocs"])
expect(label + ": totals.frees", st["frees"], ft["frees"] + ft["unknown_frees"])
if abs(st["alloc_bytes"] - ft["alloc_bytes"]) > 256:
    fail("%s: totals.alloc_bytes %d, the full trace's %d" % (label, st["alloc_bytes"],
                                                             ft["alloc_bytes"]))
print("%s: %d allocations, %d bytes, %d frees in both traces" % (name, ft["allocs"],
      ft["alloc_bytes"], ft["frees"] + ft["unknown_frees"]))
PY
done
