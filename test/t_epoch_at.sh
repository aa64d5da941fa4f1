#!/bin/sh
# CHURN_EPOCH_AT (test/programs/epoch_at.cc): every call of the named functions begins an
# epoch.  A C name (handle_delivery) and a qualified C++ constructor (app::Request::Request,
# turned into its mangled prefix) are each called 50 times: 100 epochs begin, and every one of
# them holds exactly the one allocation that follows its call.  The executable also holds a
# local function named handle_delivery (test/programs/epoch_at_local.c), never called and
# first in its .symtab: the global definition is the one the name means.  A name that
# matches nothing is one line on stderr at start-up, and the program still runs; behind a
# wrapper (timeout) that lacks it, the line names the wrapper, and the program is traced.
. test/lib.sh

gcc $PROG_CFLAGS -std=gnu11 -c -o "$WORK/epoch_at_local.o" test/programs/epoch_at_local.c \
    >"$WORK/local.build.log" 2>&1 ||
    fail "cannot compile test/programs/epoch_at_local.c: $(tail -n 1 "$WORK/local.build.log")"
build_cxx epoch_at test/programs/epoch_at.cc -O1 "$WORK/epoch_at_local.o"
defs=$(nm "$WORK/epoch_at" | awk '$3 == "handle_delivery" { print $2 }' | LC_ALL=C sort | tr -d '\n')
[ "$defs" = Tt ] || fail "epoch_at does not define handle_delivery both globally and locally: '$defs'"
CHURN_EPOCH_AT="handle_delivery,app::Request::Request" \
    traced "$WORK/trace.zst" "$WORK/out" "$WORK/epoch_at" 50
analyze "$WORK/trace.zst" "$WORK/report.json"
check "$WORK/report.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
epochs = [e for e in field(report, "epochs") if e.get("summary")]
# epoch 0 (start-up) plus one per call; the last one also holds the exit's own work
begun = field(report, "metadata", "last_epoch")
expect("epochs begun by 100 calls", begun, 100)
for e in field(report, "epochs"):
    if 1 <= e["epoch"] <= 99:
        expect("allocs in epoch %d" % e["epoch"], e["allocs"], 1)
        expect("frees in epoch %d" % e["epoch"], e["frees"], 1)
print("100 calls began 100 epochs, one allocation each")
PY

out=$(CHURN_EPOCH_AT=no_such_function CHURN_OUT="$WORK/none.zst" LD_PRELOAD="$SHIM" \
    "$WORK/epoch_at" 3 2>"$WORK/err") || fail "the program failed with an unknown CHURN_EPOCH_AT name"
echo "$out" | grep -q "3 deliveries" || fail "the program's output changed: $out"
grep -q 'CHURN_EPOCH_AT: no function "no_such_function"' "$WORK/err" ||
    fail "no clear error for an unknown name: $(cat "$WORK/err")"
echo "unknown name reported: $(cat "$WORK/err")"
# A wrapper in front (timeout) lacks the function and is not traced, while the program it runs
# is: the line names the process it is about, not "not tracing" the run.
rm -f "$WORK"/wrapped*
CHURN_EPOCH_AT=handle_delivery CHURN_OUT="$WORK/wrapped.zst" LD_PRELOAD="$SHIM" \
    timeout 60 "$WORK/epoch_at" 3 >/dev/null 2>"$WORK/err" || fail "the program failed behind timeout"
timeout=$(command -v timeout)
grep -q "CHURN_EPOCH_AT: no function \"handle_delivery\" in $timeout (pid [0-9]*) or its libraries; not tracing this process" "$WORK/err" ||
    fail "the wrapper's line does not name it: $(cat "$WORK/err")"
ls "$WORK"/wrapped.*.zst >/dev/null 2>&1 || fail "the program behind timeout was not traced"
echo "behind timeout: $(cat "$WORK/err")"

# A function of a shared library: each of its 30 calls begins an epoch holding its own
# allocation and its free of the previous one.
gcc $PROG_CFLAGS -std=gnu11 -shared -fPIC -DLIBRARY -o "$WORK/libepochlib.so" \
    test/programs/epoch_at_lib.c || fail "cannot build libepochlib.so"
build_c epoch_at_lib test/programs/epoch_at_lib.c -L"$WORK" -lepochlib -Wl,-rpath,"$WORK"
CHURN_EPOCH_AT=lib_request traced "$WORK/lib.zst" "$WORK/lib.out" "$WORK/epoch_at_lib" 30
analyze "$WORK/lib.zst" "$WORK/lib.json"
check "$WORK/lib.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
expect("epochs begun by 30 calls of a library function", field(report, "metadata", "last_epoch"), 30)
for e in field(report, "epochs"):
    if 2 <= e["epoch"] <= 29:
        expect("allocs, frees in epoch %d" % e["epoch"], (e["allocs"], e["frees"]), (1, 1))
print("30 calls of lib_request in libepochlib.so began 30 epochs")
PY
