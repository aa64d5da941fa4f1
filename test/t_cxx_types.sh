#!/bin/sh
# The C++ type built in the memory an allocation returned (test/programs/cxx_types.cc, 200
# epochs): read from the caller's machine code after the call to operator new, a callsite
# gets the class whose constructor receives the new pointer (an out-of-line constructor,
# a template's, one in a factory function) and none where nothing is constructed there
# (plain data, an inlined constructor).  JSON rows, function rows and the text report.
. test/lib.sh

build_cxx cxx_types test/programs/cxx_types.cc
traced "$WORK/trace.zst" "$WORK/out" "$WORK/cxx_types"
analyze "$WORK/trace.zst" "$WORK/report.json"
"$ANALYZE" "$WORK/trace.zst" >"$WORK/report.txt" 2>&1 || fail "churn-analyze text report failed"

check "$WORK/report.json" "$WORK/report.txt" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
text = open(sys.argv[2]).read()
epochs = 200
# The program's own callsites: 200 allocations each, told apart by object size.
rows = [g for g in field(report, "growth") if g["allocs"] == epochs and g["frees"] == 0]
by_size = {}
for g in rows:
    by_size.setdefault(g["alloc_bytes"] // epochs, []).append(g["type"])
expect("types of the 160-byte objects", by_size.get(160), ["app::DeleteQueue"])
expect("types of the 48-byte objects", by_size.get(48), ["app::Session"])
expect("types of the 24-byte arrays", by_size.get(24), [None])
expect("types of the 8-byte objects", sorted(by_size.get(8, []), key=str),
       sorted(["app::Holder<double>", None], key=str))
functions = {f["function"]: f for f in field(report, "functions")}
factory = functions.get("app::make_session(int)") or functions.get("app::make_session")
if not factory:
    fail("no functions row for the factory: %s" % list(functions))
expect("the factory's type", factory["type"], "app::Session")
if "type app::DeleteQueue" not in text or "type app::Session" not in text:
    fail("the text report does not name the types")
print("DeleteQueue, Holder<double>, Session named; plain data and an inlined constructor not")
PY
