#!/bin/sh
# A program that installs a seccomp filter (test/programs/seccomp_install.c).  Where the
# filter stops a system call libchurn makes while it traces (a filter that kills, first thing
# in main, on every thread; one that fails calls with EPERM, later, on every thread or on the
# main thread alone; strict mode), the program must run as natively (status, output) and the
# trace end before the filter is in place: every allocation made before it, an exit record of
# kind detach whose detail says seccomp, and a line on stderr.  The filter that kills runs 12
# times (libchurn's writer must have started before main).  A filter that stops nothing
# libchurn needs leaves the trace whole.  An image that starts under a filter its parent
# installed, which kills on process_vm_readv, execs as natively.
. test/lib.sh

build_c seccomp_install test/programs/seccomp_install.c

run() {
    mode=$1 name=$2
    "$WORK/seccomp_install" "$mode" >"$WORK/$name.native" 2>&1 ||
        fail "$mode natively: exit status $?: $(tail -n 1 "$WORK/$name.native")"
    status=0
    env CHURN_OUT="$WORK/$name.zst" LD_PRELOAD="$SHIM" "$WORK/seccomp_install" "$mode" \
        >"$WORK/$name.out" 2>"$WORK/$name.err" || status=$?
    [ "$status" -eq 0 ] ||
        fail "$mode under the shim: exit status $status (natively 0): $(tail -n 1 "$WORK/$name.err")"
    cmp -s "$WORK/$name.native" "$WORK/$name.out" ||
        fail "$mode under the shim printed '$(tr '\n' ' ' <"$WORK/$name.out")', natively '$(tr '\n' ' ' <"$WORK/$name.native")'"
    analyze "$WORK/$name.zst" "$WORK/$name.json"
}

for run in 1 2 3 4 5 6 7 8 9 10 11 12; do
    run kill-first kill$run
done
for mode in errno-late errno-main strict; do
    run $mode $mode
done
run blacklist blacklist

# A process that starts under a filter it never saw installed (its parent's): libchurn reads
# the program's memory without process_vm_readv there, which that filter kills on.
"$WORK/seccomp_install" exec-filtered >"$WORK/inherited.native" 2>&1 ||
    fail "exec-filtered natively: exit status $?"
status=0
CHURN_OUT="$WORK/inherited.zst" CHURN_TEST_PRELOAD="$SHIM" "$WORK/seccomp_install" exec-filtered \
    >"$WORK/inherited.out" 2>"$WORK/inherited.err" || status=$?
[ "$status" -eq 0 ] ||
    fail "a traced image under an inherited filter: exit status $status at its exec: $(tail -n 1 "$WORK/inherited.err")"
cmp -s "$WORK/inherited.native" "$WORK/inherited.out" || fail "exec-filtered printed '$(cat "$WORK/inherited.out")'"
analyze "$WORK/inherited.zst" "$WORK/inherited.json"
"$ANALYZE" "$WORK/kill1.zst" >"$WORK/kill1.txt" 2>&1 || fail "churn-analyze of kill1.zst failed"
grep -q 'tracing stopped: the program installed a seccomp filter' "$WORK/kill1.txt" ||
    fail "the text report does not say why the trace ended: $(sed -n 2p "$WORK/kill1.txt")"

check "$WORK" <<'PY'
import os, sys
from churncheck import *
work = sys.argv[1]
said = "installs a seccomp filter that "
for name in ["kill%d" % i for i in range(1, 13)] + ["errno-late", "errno-main", "strict"]:
    report = load(os.path.join(work, name + ".json"))
    before = int(open(os.path.join(work, name + ".out")).read().split()[1])
    err = open(os.path.join(work, name + ".err")).read()
    if said not in err:
        fail("%s: libchurn did not say it stopped tracing: %r" % (name, err[-300:]))
    expect(name + ": exit record", field(report, "metadata", "exit"),
           {"how": "detach", "detail": 1})
    allocs = sum(g["allocs"] for g in growth_with(report, "allocate"))
    expect(name + ": allocations traced (those before the filter)", allocs, before)
    if any(w.startswith("no exit record") for w in field(report, "warnings")):
        fail("%s: the report says the trace has no exit record" % name)
expect("inherited: exit record", field(load(os.path.join(work, "inherited.json")), "metadata",
                                      "exit", "how"), "exec")
report = load(os.path.join(work, "blacklist.json"))
if said in open(os.path.join(work, "blacklist.err")).read():
    fail("a filter that stops nothing libchurn needs stopped tracing")
expect("blacklist: exit record", field(report, "metadata", "exit", "how"), "normal")
expect("blacklist: allocations traced", sum(g["allocs"] for g in growth_with(report, "allocate")),
       200000)
print("filters that stop libchurn's calls end the trace before they are installed (15 runs); "
      "one that does not leaves it whole")
PY
