#!/bin/sh
# A stack overflow inside pymalloc's hooks under CHURN_SAMPLE_BYTES, caught by a SIGSEGV handler
# that siglongjmps back (test/programs/py_overflow.c, loaded by py_overflow.py through ctypes):
# twenty overflows, each followed by 100,000 mallocs and frees before Python runs again.  The
# hooks hold libchurn's re-entrancy guard around pymalloc's call, where the stack ends; the
# jump must let it go (shim/record/guard.c), or the thread's mallocs after it go uncounted.
# Under Debian's python3.11 and pyenv's 3.11.7: the program prints what it prints natively
# (its counts aside), and the totals count at least every level's PyObject_Malloc and every
# malloc after the overflows, and as many frees.
. test/lib.sh

pythons_311
build_c py_overflow.so test/programs/py_overflow.c -shared -fPIC

for py in $pythons; do
    n=$(echo "$py" | tr '/' '_')
    "$py" test/programs/py_overflow.py "$WORK/py_overflow.so" >"$WORK/native$n.out" 2>&1 ||
        fail "$py py_overflow.py fails natively: $(tail -n 1 "$WORK/native$n.out")"
    CHURN_SAMPLE_BYTES=524288 traced "$WORK/$n.zst" "$WORK/$n.out" "$py" \
        test/programs/py_overflow.py "$WORK/py_overflow.so"
    analyze "$WORK/$n.zst" "$WORK/$n.json"
    check "$py" "$WORK/$n.json" "$WORK/$n.out" <<'PY'
import re, sys
from churncheck import *
py, report, out = sys.argv[1], load(sys.argv[2]), open(sys.argv[3]).read()
m = re.search(r"levels (\d+) after (\d+)", out)
if not m:
    fail("%s: py_overflow.py printed %r" % (py, out))
levels, after = int(m.group(1)), int(m.group(2))
if after != 20 * 100000:
    fail("%s: %d mallocs after the overflows, not 2,000,000" % (py, after))
allocs, frees = field(report, "totals", "allocs"), field(report, "totals", "frees")
if allocs < levels + after or frees < levels + after:
    fail("%s: the program made %d allocations in the recursion and %d after the overflows; the "
         "totals count %d allocations and %d frees" % (py, levels, after, allocs, frees))
expect("metadata.exit.how", field(report, "metadata", "exit", "how"), "normal")
print("%s: 20 overflows in pymalloc's hooks; %d allocations and %d frees counted, of the "
      "program's %d and %d after" % (py, allocs, frees, levels, after))
PY
done
