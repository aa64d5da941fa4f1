#!/bin/sh
# How a traced process ends (test/programs/endings.c, tls_dtor.c).  exit(3) and _exit(4) from
# main: the trace holds the work epoch exactly and ends with how the process went and its
# status (`normal` 3, `_exit` 4; the report's header `exit 3`, `_exit 4`); an uncaught SIGSEGV: the shell sees the signal (status 139,
# libchurn does not swallow it) and the trace up to the crash is readable and says signal 11.
# (abort() and kill -9 are test/t_crash.sh, exits inside malloc test/t_exit_locked.sh.)
# Thread-specific-data destructors that free and allocate after libchurn's own per-thread
# destructor ran, in two rounds: every one of those events is in the trace.  Then a vfork
# child's _exit, frees after libchurn's destructor, quick_exit, exits from a second thread and
# an exit after a failed execve, and exit_group system calls (each part says more below).
. test/lib.sh

build_c endings test/programs/endings.c
for mode in exit _exit segv; do
    rm -f "$WORK/$mode.zst"
    status=0
    CHURN_OUT="$WORK/$mode.zst" LD_PRELOAD="$SHIM" "$WORK/endings" $mode >"$WORK/$mode.out" \
        2>"$WORK/$mode.err" || status=$?
    case $mode in
    exit) want=3 how=normal detail=3 said="exit 3" ;;
    _exit) want=4 how=_exit detail=4 said="_exit 4" ;;
    segv) want=139 how=signal detail=11 said="signal 11" ;;
    esac
    [ "$status" -eq "$want" ] || fail "endings $mode exited with status $status under the shim, not $want"
    [ -s "$WORK/$mode.zst" ] || fail "endings $mode left no trace"
    analyze "$WORK/$mode.zst" "$WORK/$mode.json"
    check "$WORK/$mode.json" "$WORK/$mode.out" "$mode" "$how" "$detail" <<'PY'
import sys
from churncheck import *
report, ph, mode, how, detail = load(sys.argv[1]), phases(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
expect_epoch(report, ph["work"], "work before %s" % mode, allocs=17, frees=0, alloc_bytes=17 * 700)
expect("metadata.exit.how after %s" % mode, field(report, "metadata", "exit", "how"), how)
expect("metadata.exit.detail after %s" % mode, field(report, "metadata", "exit", "detail"), detail)
print("%s: work epoch exact, trace ends with %s %d" % (mode, how, detail))
PY
    # the report's header says the status, as the trace has it
    "$ANALYZE" "$WORK/$mode.zst" >"$WORK/$mode.txt" 2>&1 || fail "churn-analyze $mode.zst failed"
    sed -n 2p "$WORK/$mode.txt" | grep -q ", $said\$" ||
        fail "the report's header after $mode does not end with '$said': $(sed -n 2p "$WORK/$mode.txt")"
done

build_c tls_dtor test/programs/tls_dtor.c -pthread
traced "$WORK/tls.zst" "$WORK/tls.out" "$WORK/tls_dtor"
analyze "$WORK/tls.zst" "$WORK/tls.json"
check "$WORK/tls.json" "$WORK/tls.out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
count, nbytes = [int(w) for w in open(sys.argv[2]).read().split("expect ")[1].split()]
expect_epoch(report, ph["work"], "threads exiting through key destructors", allocs=count,
             frees=count, alloc_bytes=nbytes, free_bytes=nbytes)
farewell = [g for g in field(report, "growth") if any(f.startswith("destructor ") for f in g["stack"][:1])]
expect("farewell blocks allocated in the first destructor round", sum(g["allocs"] for g in farewell), 4)
expect("unknown frees", field(report, "totals", "unknown_frees"), 0)
print("key destructors: %d allocations and frees during thread exit, all traced" % count)
PY

# vfork + _exit(7) in the child: the child shares the parent's memory, and must neither end
# the parent's trace nor stop its writer.
build_c vfork_exit test/programs/vfork_exit.c
traced "$WORK/vfork.zst" "$WORK/vfork.out" "$WORK/vfork_exit"
analyze "$WORK/vfork.zst" "$WORK/vfork.json"
check "$WORK/vfork.json" "$WORK/vfork.out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
expect_epoch(report, ph["before"], "work before the vfork", allocs=5, frees=0, alloc_bytes=5 * 400)
expect_epoch(report, ph["after"], "work after the vfork child's _exit", allocs=9, frees=0,
             alloc_bytes=9 * 400)
expect("metadata.exit after the vfork", field(report, "metadata", "exit"), {"how": "normal", "detail": 0})
print("vfork: the parent's trace goes on after its child's _exit and ends with its own exit")
PY

# Heap work after libchurn's own destructor: a library initialised before libchurn frees from
# its destructor, from an atexit handler registered in its constructor, and a C++ library's
# static destructor deletes (test/programs/late_lib.c, late_cxx.cc): every free is in the
# trace, which ends after the program's last heap operation.
gcc $PROG_CFLAGS -std=gnu11 -shared -fPIC -o "$WORK/liblate_lib.so" test/programs/late_lib.c ||
    fail "cannot build late_lib.so"
g++ $PROG_CFLAGS -std=gnu++17 -shared -fPIC -o "$WORK/liblate_cxx.so" test/programs/late_cxx.cc ||
    fail "cannot build late_cxx.so"
build_c late_frees test/programs/late_frees.c -L"$WORK" -llate_lib -llate_cxx -Wl,-rpath,"$WORK"
traced "$WORK/late.zst" "$WORK/late.out" "$WORK/late_frees"
analyze "$WORK/late.zst" "$WORK/late.json"
check "$WORK/late.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
lib = growth_with(report, "late_lib_init")
expect("late_lib_init's blocks (allocs, frees)", (sum(g["allocs"] for g in lib), sum(g["frees"] for g in lib)),
       (2 * 999, 2 * 999))
cxx = growth_with(report, "Keeper::Keeper")
made = sum(g["allocs"] for g in cxx)
if made < 555:
    fail("Keeper's constructor: %d allocations traced, not at least its 555 new int[50]" % made)
expect("Keeper's allocations (frees, live_count)",
       (sum(g["frees"] for g in cxx), sum(g["live_count"] for g in cxx)), (made, 0))
expect("metadata.exit", field(report, "metadata", "exit"), {"how": "normal", "detail": 0})
print("late frees: destructor, atexit and C++ static destructor frees all traced")
PY

# Ways out past exit()'s ordinary path (test/programs/exit_ways.c): quick_exit (its
# at_quick_exit handler frees the work; glibc ends it in its internal _exit), exit and _exit
# from a second thread while main allocates, and exit after an execve that failed.
build_c exit_ways test/programs/exit_ways.c -pthread
for mode in quick thread thread_ exec_fail; do
    case $mode in
    quick) want=6 how=quick_exit frees=13 ;;
    thread) want=8 how=normal frees=0 ;;
    thread_) want=11 how=_exit frees=0 ;;
    exec_fail) want=12 how=normal frees=13 ;;
    esac
    rm -f "$WORK/$mode.zst"
    status=0
    timeout -k 2 10 env CHURN_OUT="$WORK/$mode.zst" LD_PRELOAD="$SHIM" "$WORK/exit_ways" $mode \
        >"$WORK/$mode.out" 2>"$WORK/$mode.err" || status=$?
    [ "$status" -eq "$want" ] || fail "exit_ways $mode exited with status $status under the shim, not $want"
    analyze "$WORK/$mode.zst" "$WORK/$mode.json"
    check "$WORK/$mode.json" "$WORK/$mode.out" $mode $how $want $frees <<'PY'
import sys
from churncheck import *
report, ph, mode, how, status, frees = load(sys.argv[1]), phases(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
expect_epoch(report, ph["work"], "work before %s" % mode, allocs=13, frees=0, alloc_bytes=13 * 600)
work = [g for g in field(report, "growth") if g["stack"] and "main" in g["stack"][0] and g["allocs"] == 13]
expect("%s: the work's blocks (allocs, frees)" % mode,
       (sum(g["allocs"] for g in work), sum(g["frees"] for g in work)), (13, frees))
expect("%s: metadata.exit" % mode, field(report, "metadata", "exit"), {"how": how, "detail": status})
expect("%s: damaged segments" % mode, field(report, "metadata", "segments_damaged"), 0)
print("%s: status %d, trace complete and ends %s %d" % (mode, status, how, status))
PY
done

# exit_group past every libc exit function (test/programs/raw_exit.c): through glibc's
# syscall() wrapper from main and from a second thread, the trace is complete (the work, the
# frees before it) and ends as _exit does, with the status.  A syscall instruction inline
# reaches nothing of libchurn's: with CHURN_FLUSH_MS=10 the work is in the trace, the frees
# just before the exit are not (what came after the last checkpoint or segment is lost), and
# the report says the exit may have been an inline exit_group rather than only a kill, and
# what the trace holds (t_checkpoint.sh measures what it lacks).
build_c raw_exit test/programs/raw_exit.c -pthread
for mode in syscall thread asm; do
    case $mode in
    syscall) want=9 ;;
    thread) want=10 ;;
    asm) want=11 ;;
    esac
    rm -f "$WORK/raw_$mode.zst"
    status=0
    timeout -k 2 10 env CHURN_FLUSH_MS=10 CHURN_OUT="$WORK/raw_$mode.zst" LD_PRELOAD="$SHIM" \
        "$WORK/raw_exit" $mode >"$WORK/raw_$mode.out" 2>"$WORK/raw_$mode.err" || status=$?
    [ "$status" -eq "$want" ] || fail "raw_exit $mode exited with status $status under the shim, not $want"
    analyze "$WORK/raw_$mode.zst" "$WORK/raw_$mode.json"
    check "$WORK/raw_$mode.json" "$WORK/raw_$mode.out" $mode $want <<'PY'
import sys
from churncheck import *
report, ph, mode, status = load(sys.argv[1]), phases(sys.argv[2]), sys.argv[3], int(sys.argv[4])
expect_epoch(report, ph["work"], "work before %s" % mode, allocs=13, frees=0, alloc_bytes=13 * 600)
work = [g for g in field(report, "growth") if g["stack"] and "main" in g["stack"][0] and g["allocs"] == 13]
frees = sum(g["frees"] for g in work)
exit_ = field(report, "metadata").get("exit")
said = [w for w in field(report, "warnings") if w.startswith("no exit record")]
if mode != "asm":
    expect("%s: the work's blocks (allocs, frees)" % mode, (sum(g["allocs"] for g in work), frees), (13, 5))
    expect("%s: metadata.exit" % mode, exit_, {"how": "_exit", "detail": status})
    print("raw %s: status %d, trace complete and ends _exit %d" % (mode, status, status))
    sys.exit(0)
if exit_ and exit_.get("how") != "none":
    fail("asm: an exit record %r for an exit nothing of libchurn's saw" % exit_)
if not said or "exit_group system call made inline" not in said[0] or "lacks what came after it" not in said[0]:
    fail("asm: the report does not name an inline exit_group and what it loses: %r" % field(report, "warnings"))
if frees > 5:
    fail("asm: %d frees of the work traced, the program made 5" % frees)
print("raw asm: status %d; the work is in the trace, %d of the 5 frees made just before the inline "
      "exit_group are lost; the report says: %s" % (status, 5 - frees, said[0][:60]))
PY
done

# Under `churn run` the parent sees the status the kernel reports: an inline exit_group is
# named as such in its lines (the trace recorded no end), never for an exit libchurn saw.
CHURN=$ROOT/build/churn
[ -x "$CHURN" ] || fail "build/churn is missing: run make"
for mode in asm syscall; do
    status=0
    CHURN_FLUSH_MS=10 timeout -k 2 10 "$CHURN" run -o "$WORK/run_$mode.zst" "$WORK/raw_exit" $mode \
        >/dev/null 2>"$WORK/run_$mode.err" || status=$?
    said=$(grep -c 'by an exit_group system call made inline, which libchurn cannot see: the trace has no exit record' "$WORK/run_$mode.err" || true)
    case $mode in
    asm) [ "$status" -eq 11 ] && [ "$said" -eq 1 ] ||
        fail "churn run, inline exit_group: status $status, not 11, or no line naming it: $(cat "$WORK/run_$mode.err")" ;;
    syscall) [ "$status" -eq 9 ] && [ "$said" -eq 0 ] ||
        fail "churn run, syscall(SYS_exit_group): status $status, or an inline exit_group named: $(cat "$WORK/run_$mode.err")" ;;
    esac
done
echo "churn run: an inline exit_group named by the parent, syscall()'s not"
