#!/bin/sh
# CHURN_SAMPLE_BYTES on CPython (the sampled fast paths of shim/ways/way_pymalloc.c and
# shim/ways/interpose.c): bench/python_churn.py, 3,000 rounds, traced in full and sampled at
# N = 4 KiB and 512 KiB, under Debian's python3.11 and pyenv's 3.11.7 (a machine without it
# says NOT RUN and checks the rest), each with its default allocator (pymalloc, traced
# through its hooks) and with PYTHONMALLOC=malloc (every object through malloc, calloc,
# realloc and free).  Sampled: the program prints the same; the totals of allocations and
# frees equal the full trace's, and so do the bytes allocated, within 256 (the interpreter's
# own, which vary by a few bytes from run to run); no free of an unsampled object is in
# the trace (an unknown free).  (Every run's environment holds a CHURN_SAMPLE_BYTES value
# of the same length, and every run has the same address layout (fixed_layout, test/lib.sh):
# the interpreter's count of allocations is the same in all three, and its bytes differ by
# no step of 1,000.)
. test/lib.sh

fixed_layout
pythons_311

i=0
for py in $pythons; do
    for mem in pymalloc malloc; do
        i=$((i + 1))
        for n in 0000000 0004096 0524288; do
            # (CPython takes an empty PYTHONMALLOC for none: its default allocator)
            pm=
            [ $mem = malloc ] && pm=malloc
            PYTHONHASHSEED=0 PYTHONMALLOC=$pm CHURN_SAMPLE_BYTES=$n traced "$WORK/py$i.$n.zst" \
                "$WORK/py$i.$n.out" "$py" bench/python_churn.py 3000
            analyze "$WORK/py$i.$n.zst" "$WORK/py$i.$n.json"
            cmp -s "$WORK/py$i.0000000.out" "$WORK/py$i.$n.out" ||
                fail "$py ($mem) printed something else with CHURN_SAMPLE_BYTES=$n"
        done
        check "$WORK/py$i" "$py ($mem)" <<'PY'
import sys
from churncheck import *
base, name = sys.argv[1], sys.argv[2]
ft = field(load(base + ".0000000.json"), "totals")
if ft["allocs"] < 300000:
    fail("%s: the full trace counts %d allocations, fewer than the workload makes" % (name, ft["allocs"]))
for n in ("0004096", "0524288"):
    st = field(load("%s.%s.json" % (base, n)), "totals")
    label = "%s at CHURN_SAMPLE_BYTES=%d" % (name, int(n))
    expect(label + ": totals.allocs", st["allocs"], ft["allocs"])
    # The bytes the interpreter asks for vary by a few from one run to the next in one
    # layout: with the digits of the pid in CHURN_ROOT_PID (copied into os.environ), and
    # with what site's hooks import (pyenv's 3.11.7 here: a .pth imports certifi, and with
    # it tempfile and random, seeded from os.urandom), ints of two 30-bit digits or three,
    # 12 bytes either way (none under -S)
    if abs(st["alloc_bytes"] - ft["alloc_bytes"]) > 256:
        fail("%s: totals.alloc_bytes %d, the full trace's %d" % (label, st["alloc_bytes"],
                                                                 ft["alloc_bytes"]))
    expect(label + ": totals.frees", st["frees"], ft["frees"] + ft["unknown_frees"])
    expect(label + ": unknown frees recorded", st["unknown_frees"], 0)
print("%s: %d allocations, %d bytes, %d frees in every trace" % (name, ft["allocs"],
      ft["alloc_bytes"], ft["frees"] + ft["unknown_frees"]))
PY
    done
done
