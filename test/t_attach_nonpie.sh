#!/bin/sh
# churn attach to executables built without PIE that take malloc's address: there the
# executable's dynamic symbol for malloc is undefined but has a value, its canonical PLT
# entry (so that &malloc is one address everywhere), and a lookup by name answers with it;
# the program's calls go to the definition after the executable, which attach patches.
# attach_busy's hold mode (it allocates through pointers to malloc and free) built with
# -no-pie: a trace around its commands holds exactly their 130 allocations and 100 frees; a
# C++ program whose operator new and delete have canonical entries (test/programs/
# nonpie_cxx.cc), allocating from the executable and from a library: exactly 170 and 150;
# Debian's python3.11 and the pinned nodejs.org node (test/node/install.sh), both non-PIE
# with canonical entries for malloc and free: an attach, a detach, the program's output as
# natively, the trace complete (EXIT of kind detach) and not empty.  The allocator is named
# glibc in each (its books read), as for a PIE program.
. test/lib.sh
. test/attach_hold.sh

CHURN=$ROOT/build/churn
[ -x "$CHURN" ] || fail "build/churn is missing: run make"

# canonical EXE SYMBOL: fails unless EXE is not PIE and has a canonical PLT entry for SYMBOL
canonical() {
    readelf -h "$1" | grep -q 'Type: *EXEC' || fail "$1 is not a non-PIE executable: the case is not tested"
    readelf --dyn-syms -W "$1" | awk -v s="$2" '$7 == "UND" && $8 ~ "^" s "@" && $2 !~ /^0+$/' |
        grep -q . || fail "$1 has no canonical PLT entry for $2: the case is not tested"
}

# cycle NAME: one attach, a pause, a detach of PID; the trace analyzed into NAME.json
cycle() {
    timeout 60 "$CHURN" attach -o "$WORK/$1.zst" "$PID" 2>"$WORK/$1.attach" ||
        fail "$1: attach: $(tail -n 1 "$WORK/$1.attach")"
    sleep 0.5
    timeout 60 "$CHURN" detach "$PID" 2>"$WORK/$1.detach" ||
        fail "$1: detach: $(tail -n 1 "$WORK/$1.detach")"
    analyze "$WORK/$1.zst" "$WORK/$1.json"
    check "$WORK/$1.json" "$1" <<'EOF'
import sys
from churncheck import load, field, expect, fail
r = load(sys.argv[1])
expect(sys.argv[2] + ": exit", field(r, "metadata", "exit", "how"), "detach")
expect(sys.argv[2] + ": allocator", field(r, "metadata", "allocator"), "glibc")
if field(r, "totals", "allocs") == 0:
    fail(sys.argv[2] + ": nothing traced: %r" % field(r, "totals"))
EOF
}

# ---- a C program of our own: exact counts ----
build_c attach_nonpie test/programs/attach_busy.c -pthread -no-pie -fno-pie
canonical "$WORK/attach_nonpie" malloc
canonical "$WORK/attach_nonpie" free
start hold "$WORK/attach_nonpie" hold
held nonpie -- "alloc 100" "free" "alloc 30"
finish
[ "$STATUS" -eq 0 ] || fail "attach_busy hold (non-PIE) exited with status $STATUS"
check "$WORK/nonpie.json" <<'EOF'
import sys
from churncheck import load, field, expect
r = load(sys.argv[1])
expect("non-PIE: allocs, frees, live at the detach",
       (field(r, "totals", "allocs"), field(r, "totals", "frees"),
        field(r, "leaked_at_exit", "count")), (130, 100, 30))
expect("non-PIE: exit", field(r, "metadata", "exit", "how"), "detach")
expect("non-PIE: allocator", field(r, "metadata", "allocator"), "glibc")
EOF
echo "attach_busy -no-pie: 130 allocations, 100 frees, 30 live, exactly"

# ---- C++: canonical entries for operator new and delete; a library's calls of operator new
# bind to libstdc++'s definition, not to the executable's entry ----
build_cxx nonpie_cxx_lib.so test/programs/nonpie_cxx_lib.cc -shared -fPIC
build_cxx nonpie_cxx test/programs/nonpie_cxx.cc -no-pie -fno-pie -L"$WORK" -l:nonpie_cxx_lib.so \
    -Wl,-rpath,"$WORK"
canonical "$WORK/nonpie_cxx" _Znwm
canonical "$WORK/nonpie_cxx" _ZdlPv
oks=0
rm -f "$WORK/hold.out" # start reads the pid from it once it is not empty
start hold "$WORK/nonpie_cxx"
held nonpie_cxx -- "exe 100" "lib 50" "free" "lib 20"
finish
[ "$STATUS" -eq 0 ] || fail "nonpie_cxx exited with status $STATUS"
check "$WORK/nonpie_cxx.json" <<'EOF'
import sys
from churncheck import load, field, expect
r = load(sys.argv[1])
expect("non-PIE C++: allocs, frees, frees from before the attach, live at the detach",
       (field(r, "totals", "allocs"), field(r, "totals", "frees"),
        field(r, "totals", "unknown_frees"), field(r, "leaked_at_exit", "count")),
       (170, 150, 0, 20))
EOF
echo "nonpie_cxx: operator new from the executable and from a library, 170 allocations, 150 frees, exactly"

# ---- Debian's python3.11 ----
PY=/usr/bin/python3.11
[ -x "$PY" ] || fail "$PY is missing (Debian python3.11)"
canonical "$PY" malloc
python_loop 2000
"$PY" "$WORK/loop.py" </dev/null | tail -n 1 >"$WORK/python.native" || fail "$PY loop.py failed"
start python "$PY" "$WORK/loop.py"
cycle python
finish
[ "$STATUS" -eq 0 ] || fail "$PY exited with status $STATUS after an attach and a detach"
[ "$(tail -n 1 "$WORK/python.out")" = "$(cat "$WORK/python.native")" ] ||
    fail "$PY's result changed: $(tail -n 1 "$WORK/python.out")"
echo "python3.11 (non-PIE): attached, detached, result unchanged"

# ---- node, the pinned nodejs.org build ----
NODE=$(test/node/install.sh 2>"$WORK/install.err") || fail "$(tail -n 1 "$WORK/install.err")"
canonical "$NODE" malloc
cat >"$WORK/loop.js" <<'EOF'
const crypto = require("crypto");
console.log(process.pid);
let done = false;
process.stdin.on("data", () => {});
process.stdin.on("end", () => { done = true; });
const h = crypto.createHash("sha256");
let turn = 0;
function step() {
    for (let k = 0; k < 20; k++) {
        const bufs = [];
        for (let i = 0; i < 50; i++)
            bufs.push(Buffer.alloc(1000 + i * 37, i));
        if (turn < 2000)
            h.update(Buffer.concat(bufs).subarray(0, 64));
        turn++;
    }
    if (turn < 2000 || !done)
        setImmediate(step);
    else
        console.log(h.digest("hex"));
}
step();
EOF
"$NODE" "$WORK/loop.js" </dev/null | tail -n 1 >"$WORK/node.native" || fail "node loop.js failed"
start node "$NODE" "$WORK/loop.js"
cycle node
finish
[ "$STATUS" -eq 0 ] || fail "node exited with status $STATUS after an attach and a detach"
[ "$(tail -n 1 "$WORK/node.out")" = "$(cat "$WORK/node.native")" ] ||
    fail "node's result changed: $(tail -n 1 "$WORK/node.out")"
echo "node $("$NODE" --version) (non-PIE): attached, detached, result unchanged"
