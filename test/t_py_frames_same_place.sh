#!/bin/sh
# Python frames at the places the thread's last reads found others (shim/record/pyframes.c):
# test/programs/py_same_place.py runs different functions at one frame address on the same
# instruction offset, one function from two lines of its caller, and a generator resumed by
# two callers, each allocation with a size of its own.  Under Debian's python3.11, pyenv's
# 3.11.7, 3.12.1 and 3.13.0 (a missing one says NOT RUN), with PYTHONMALLOC=malloc, every
# size's callsite must have exactly the Python frames (function and line) of its path, and
# all of that size's allocations.  A read that took a frame for the one last found at its
# address without its caller's instruction names the wrong function or line here.
. test/lib.sh
require_built
unset PYTHONPERFSUPPORT

ROUNDS=300
ran=0
pythons_with_frames
for py in $pythons; do
    n=$(echo "$py" | tr '/' '_')
    expected=$(PYTHONMALLOC=malloc "$py" test/programs/py_same_place.py $ROUNDS)
    PYTHONMALLOC=malloc traced "$WORK/$n.zst" "$WORK/$n.out" "$py" \
        test/programs/py_same_place.py $ROUNDS
    [ "$(cat "$WORK/$n.out")" = "$expected" ] ||
        fail "$py py_same_place.py printed $(cat "$WORK/$n.out") traced, $expected not"
    analyze "$WORK/$n.zst" "$WORK/$n.json"
    check "$py" "$WORK/$n.json" "$ROOT/test/programs/py_same_place.py" $ROUNDS <<'PY'
import re, sys
from churncheck import *
py, report, script, rounds = sys.argv[1], load(sys.argv[2]), sys.argv[3], int(sys.argv[4])
mark = {}
for i, l in enumerate(open(script)):
    m = re.search(r"# @(\w+)$", l)
    if m:
        mark[m.group(1)] = i + 1
def at(fn, m):
    return "%s (%s:%d)" % (fn, script, mark[m])
module = at("<module>", "module")
paths = {
    10001: [at("leaf", "leaf"), at("via_a", "via_a"), at("main", "alternate"), module],
    20001: [at("leaf", "leaf"), at("via_b", "via_b"), at("main", "alternate"), module],
    30001: [at("leaf", "leaf"), at("via_a", "via_a"), at("main", "line_x"), module],
    40001: [at("leaf", "leaf"), at("via_a", "via_a"), at("main", "line_y"), module],
    50001: [at("chunks", "chunks"), at("first", "first"), at("main", "resume"), module],
    60001: [at("chunks", "chunks"), at("second", "second"), at("main", "resume"), module],
}
found = {}
for g in field(report, "growth"):
    frames = [f for f in g["stack"] if "(%s:" % script in f]
    if not frames or not g["allocs"]:
        continue
    size = g["alloc_bytes"] / g["allocs"]
    want = [s for s in paths if s <= size <= s + 64]
    if not want:
        continue
    if frames != paths[want[0]]:
        fail("%s: %d allocations of %d bytes have the Python frames\n  %s\nnot\n  %s"
             % (py, g["allocs"], want[0], "\n  ".join(frames), "\n  ".join(paths[want[0]])))
    found[want[0]] = found.get(want[0], 0) + g["allocs"]
for s in paths:
    expect("%s: allocations of %d bytes with their frames" % (py, s), found.get(s, 0), rounds)
print("%s: %d paths, %d allocations each, with their Python frames and lines"
      % (py, len(paths), rounds))
PY
    ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || fail "no CPython 3.11 to 3.13 on this machine: nothing tested"
echo "$ran interpreters: Python frames at the places of others"
