#!/bin/sh
# CODE records (trace format 6): a runtime's names for the code it generated, from its perf
# map, name the frames no module holds, on traces written by the independent encoder
# (test/tools/mktrace.py):
#   V8's "JS:*'handler /srv/app.js:12:30" is handler (/srv/app.js:12), its tiers (~ * ^ +,
#   ' for code specialized to its context) one function; CPython's "py::fill:/srv/app.py"
#   is fill (/srv/app.py), libchurn's from CPython's frame chain "py::fill:/srv/app.py:7"
#   (at an address above user space) fill (/srv/app.py:7); another entry
#   (V8's "Builtin:ArrayPush") keeps its name; where two entries cover an address, the later
#   names it; an address no entry covers stays bare;
#   --script-functions ranks functions by the innermost script frame, past the runtime's own
#   library (node:buffer): one row for handler's two tiers, one for fill, one for fill at
#   line 7;
#   in a version 5 trace a CODE record is malformed;
# version 7: a CODE record of kind py (0x81, code id and "qualname:file") names every line
#   of its code object's frames, walk (/srv/b.py:9) and walk (/srv/b.py:11), and a frame
#   named so is the same as one named by its own "py::qualname:file:line" record (one
#   --script-functions row for fill at line 7 by either); a frame of a code id no record
#   names stays bare; in a version 6 trace such a record is malformed.
LIB_ANALYZER_ONLY=1
. test/lib.sh

python3 - "$WORK" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
W = sys.argv[1]

OPT, BASE, BUILTIN, PY, OLD, LIB = (0x7f0000001000, 0x7f0000002000, 0x7f0000003000,
                                    0x7f0000004000, 0x7f0000005000, 0x7f0000006000)
CHAIN = 0xfe00000000010000 | 7 << 1 | 1  # code id 1, line 7 (shim/record/pyframes.c)
codes = [["code", OPT, 0x400, "JS:*'handler /srv/app.js:12:30"],
         ["code", BASE, 0x100, "JS:^handler /srv/app.js:12:30"],
         ["code", BUILTIN, 0x80, "Builtin:ArrayPush"],
         ["code", PY, 0xb, "py::fill:/srv/app.py"],
         ["code", OLD, 0x100, "JS:~before /srv/app.js:1:1"],
         ["code", OLD, 0x100, "JS:~after /srv/app.js:2:5"],
         ["code", LIB, 0x200, "JS:*alloc node:buffer:391:34"],
         ["code", CHAIN - 1, 2, "py::fill:/srv/app.py:7"]]
# innermost first: a native frame, the library's Buffer.alloc, then the program's code
stacks = [["stack", 1, [0x401000, LIB + 0x10, OPT + 0x10, 0x402000]],
          ["stack", 2, [0x401000, BUILTIN + 0x8, BASE + 0x20, 0x402000]],
          ["stack", 3, [0x401000, PY + 0xb, 0x402000]],
          ["stack", 4, [0x401000, OLD + 0x40, 0x7f0000009000]],
          ["stack", 5, [0x401000, CHAIN, 0x402000]]]

def py_frame(code, line):
    return 0xfe00000000000000 | code << 24 | line << 1 | 1

py_codes = [["py_code", 2, "walk:/srv/b.py"], ["py_code", 4, "fill:/srv/app.py"]]
py_stacks = [["stack", 6, [0x401000, py_frame(2, 9), 0x402000]],
             ["stack", 7, [0x401000, py_frame(2, 11), py_frame(3, 4), 0x402000]],
             ["stack", 8, [0x401000, py_frame(4, 7), 0x402000]]]

def trace(name, version, more_codes=(), more_stacks=()):
    recs = mktrace.prelude(0, 0) + codes + list(more_codes) + stacks + list(more_stacks)
    recs.append(["thread", 1])
    for epoch in range(4):
        recs.append(["epoch", epoch])
        for stack in range(1, 6 + len(more_stacks)):
            recs.append(["alloc", 0, 0x10000000 + epoch * 0x1000 + stack * 0x100, 64, 0, stack])
        recs.append(["epoch_end", {"epoch": epoch}])
    recs.append(["exit", 1, 0])
    open(os.path.join(W, name), "wb").write(mktrace.build(
        {"header": {"version": version},
         "segments": [{"seq": 0, "version": version, "first_epoch": 0, "last_epoch": 3,
                       "records": recs}]}))

trace("codes", 6)
trace("codes5", 5)
trace("codes7", 7, py_codes, py_stacks)
trace("codes6py", 6, py_codes, py_stacks)
PY

analyze "$WORK/codes" "$WORK/codes.json"
analyze "$WORK/codes" "$WORK/scripts.json" --script-functions
analyze "$WORK/codes5" "$WORK/codes5.json"
analyze "$WORK/codes7" "$WORK/codes7.json"
analyze "$WORK/codes7" "$WORK/scripts7.json" --script-functions
analyze "$WORK/codes6py" "$WORK/codes6py.json"
check "$WORK/codes.json" "$WORK/scripts.json" "$WORK/codes5.json" <<'PY'
import sys
from churncheck import *
report, scripts, old = (load(p) for p in sys.argv[1:])
stacks = {tuple(g["stack"]) for g in field(report, "growth")}
want = {("0x401000", "alloc (node:buffer:391)", "handler (/srv/app.js:12)", "0x402000"),
        ("0x401000", "Builtin:ArrayPush (0x7f0000003008)", "handler (/srv/app.js:12)",
         "0x402000"),
        ("0x401000", "fill (/srv/app.py)", "0x402000"),
        ("0x401000", "after (/srv/app.js:2)", "0x7f0000009000"),
        ("0x401000", "fill (/srv/app.py:7)", "0x402000")}
expect("the stacks, named", stacks, want)
rows = {(f["function"], f["module"]): f["stacks"] for f in field(scripts, "functions")}
expect("--script-functions rows (function, place): stacks",
       rows, {("handler", "/srv/app.js:12"): 2, ("fill", "/srv/app.py"): 1,
              ("fill", "/srv/app.py:7"): 1, ("after", "/srv/app.js:2"): 1})
w = field(old, "warnings")
if not any(x.startswith("segment 0: malformed record (tag 0x80)") for x in w):
    fail("a version 5 trace with a CODE record is not said malformed: %s" % w)
print("named: handler (/srv/app.js:12) in two tiers, fill (/srv/app.py) and (/srv/app.py:7), "
      "Builtin:ArrayPush, "
      "the later of two entries; --script-functions: %d rows" % len(rows))
PY

check "$WORK/codes7.json" "$WORK/scripts7.json" "$WORK/codes6py.json" <<'PY'
import sys
from churncheck import *
report, scripts, old = (load(p) for p in sys.argv[1:])
stacks = {tuple(g["stack"]) for g in field(report, "growth")}
want = {("0x401000", "walk (/srv/b.py:9)", "0x402000"),
        ("0x401000", "walk (/srv/b.py:11)", "0xfe00000003000009", "0x402000"),
        ("0x401000", "fill (/srv/app.py:7)", "0x402000")}
if not want <= stacks:
    fail("version 7: the stacks named by code objects: want %s among %s" % (want, stacks))
rows = {(f["function"], f["module"]): f["stacks"] for f in field(scripts, "functions")}
for row, n in (((("fill", "/srv/app.py:7")), 2), (("walk", "/srv/b.py:9"), 1),
               (("walk", "/srv/b.py:11"), 1)):
    expect("version 7: --script-functions stacks of %s" % (row,), rows.get(row), n)
w = field(old, "warnings")
if not any(x.startswith("segment 0: malformed record (tag 0x81)") for x in w):
    fail("a version 6 trace with a CODE record of kind py is not said malformed: %s" % w)
print("version 7: walk (/srv/b.py:9) and (/srv/b.py:11) by one record, fill (/srv/app.py:7) "
      "one row by either record")
PY
