#!/bin/sh
# dlopen and dlclose during tracing (test/programs/dl.c, dl_lib.c).  Two libraries each
# allocate through their own function and are unloaded before the program ends, between two
# passes of libchurn's writer.  Their allocations must still symbolize to that library's
# function: `apart`, B loaded while A is still there (different addresses); `reuse`, A
# unloaded first and B loaded at the address A had, so the same address means A's code
# before the dlclose and B's after.  `moved`: the same with libraries without debug info and B
# linked at another address, loaded where A was with another bias, so that a frame prints
# as function (module+offset): the name and the offset must both be those of the library
# the frame's stack ran in, A's before the dlclose and B's after.  `deepbind` (test/programs/deepbind.c, deepbind_lib.c): a
# library loaded with RTLD_DEEPBIND, bound at once, lazily or with a read-only GOT, mallocs and frees in a loop and
# frees strdup's blocks (allocated inside libc): every one of its frees must be seen and
# exactly the KEEP blocks it keeps be live at exit, and libchurn says on stderr what it did;
# a deep-bound library with a malloc and free of its own (deepbind_own.c) keeps them, and
# libchurn names them as not traced.
. test/lib.sh

build_c dl test/programs/dl.c -ldl
gcc $PROG_CFLAGS -fPIC -shared -o "$WORK/liba.so" test/programs/dl_lib.c ||
    fail "cannot build library A"
gcc $PROG_CFLAGS -fPIC -shared -DLIB_B -o "$WORK/libb.so" test/programs/dl_lib.c ||
    fail "cannot build library B"
for mode in apart reuse; do
    traced "$WORK/$mode.zst" "$WORK/$mode.out" "$WORK/dl" $mode "$WORK/liba.so" "$WORK/libb.so"
    analyze "$WORK/$mode.zst" "$WORK/$mode.json"
    check "$WORK/$mode.json" "$WORK/$mode.out" "$mode" <<'PY'
import sys
from churncheck import *
report, mode = load(sys.argv[1]), sys.argv[3]
base_a, base_b = [int(w) for w in open(sys.argv[2]).read().split("bases ")[1].split()[:2]]
if mode == "reuse" and base_a != base_b:
    fail("library B was not loaded where A had been: this run does not test address reuse")
if mode == "apart" and base_a == base_b:
    fail("both libraries loaded at one address while both were open")
for function, count in (("alloc_in_a", 5), ("alloc_in_b", 7)):
    at = [g for g in field(report, "growth") if g["stack"] and g["stack"][0].startswith(function + " ")]
    if sum(g["allocs"] for g in at) != count:
        calls = [(g["allocs"], g["stack"][:2]) for g in field(report, "growth")
                 if len(g["stack"]) > 1 and g["stack"][1].startswith("main ")]
        fail("%s: %d allocations symbolized to %s, expected %d; main's callees: %s"
             % (mode, sum(g["allocs"] for g in at), function, count, calls))
print("%s: both unloaded libraries' allocations symbolize to their own functions" % mode)
PY
done

# No -g: the frames then show module+offset, taken from the module map of their stack's time.
NODEBUG_CFLAGS="-O2 -fno-omit-frame-pointer -Wall -Wextra -Werror -fPIC -shared"
gcc $NODEBUG_CFLAGS -o "$WORK/libmoved_a.so" test/programs/dl_lib.c ||
    fail "cannot build library A without debug info"
gcc $NODEBUG_CFLAGS -DLIB_B -Wl,-Ttext-segment=0x10000000 -o "$WORK/libmoved_b.so" \
    test/programs/dl_lib.c || fail "cannot build library B linked at 0x10000000"
traced "$WORK/moved.zst" "$WORK/moved.out" "$WORK/dl" moved "$WORK/libmoved_a.so" \
    "$WORK/libmoved_b.so"
analyze "$WORK/moved.zst" "$WORK/moved.json"
"$ANALYZE" "$WORK/moved.zst" >"$WORK/moved.txt" 2>"$WORK/moved.txt.err" ||
    fail "churn-analyze (text) of the moved trace failed: $(tail -n 1 "$WORK/moved.txt.err")"
check "$WORK/moved.json" "$WORK/moved.out" "$WORK/moved.txt" \
    "$(nm -S --defined-only "$WORK/libmoved_a.so" | awk '$4 == "alloc_in_a" { print $1, $2 }')" \
    "$(nm -S --defined-only "$WORK/libmoved_b.so" | awk '$4 == "alloc_in_b" { print $1, $2 }')" <<'PY'
import re, sys
from churncheck import *
report, out, text = load(sys.argv[1]), open(sys.argv[2]).read(), open(sys.argv[3]).read()
symbols = {"alloc_in_a": [int(w, 16) for w in sys.argv[4].split()],
           "alloc_in_b": [int(w, 16) for w in sys.argv[5].split()]}
base_a, base_b = [int(w) for w in out.split("bases ")[1].split()[:2]]
start_a, start_b = [int(w) for w in out.split("starts ")[1].split()[:2]]
if start_a != start_b:
    fail("moved: library B was mapped at %#x, not where A had been (%#x): the loader placed it "
         "elsewhere, so this run does not test a reused address" % (start_b, start_a))
if base_a == base_b:
    fail("moved: both libraries have the bias %#x: this run does not test another bias" % base_a)
for function, module, count in (("alloc_in_a", "libmoved_a.so", 5), ("alloc_in_b", "libmoved_b.so", 7)):
    at = [g for g in field(report, "growth") if g["stack"] and g["stack"][0].startswith(function + " ")]
    expect("moved: allocations symbolized to %s" % function, sum(g["allocs"] for g in at), count)
    sym_start, sym_size = symbols[function]
    for frame in set(g["stack"][0] for g in at):
        m = re.fullmatch(r"%s \((\S+)\+0x([0-9a-f]+)\)" % function, frame)
        if not m:
            fail("moved: the frame %r is not %s (module+offset)" % (frame, function))
        # a return address: the call is the byte before it
        offset = int(m.group(2), 16) - 1
        if m.group(1) != module or not sym_start <= offset < sym_start + sym_size:
            fail("moved: the frame %r names %s but its module and offset are not inside it "
                 "(%s+0x%x..0x%x): name and offset from different generations of the module map"
                 % (frame, function, module, sym_start, sym_start + sym_size))
        if frame not in text:
            fail("moved: the text report does not show the frame %r" % frame)
print("moved: B at A's address %#x with bias %#x (A's %#x); both libraries' frames name their "
      "own function, module and offset" % (start_a, base_b, base_a))
PY

build_c deepbind test/programs/deepbind.c -ldl
gcc $PROG_CFLAGS -fPIC -shared -o "$WORK/libdeep.so" test/programs/deepbind_lib.c ||
    fail "cannot build the RTLD_DEEPBIND library"
# relro: linked with -z now, its GOT is read-only once loaded
gcc $PROG_CFLAGS -fPIC -shared -Wl,-z,relro,-z,now -o "$WORK/libdeep-relro.so" test/programs/deepbind_lib.c ||
    fail "cannot build the RTLD_DEEPBIND library with a read-only GOT"
for bind in now lazy relro; do
    lib=$WORK/libdeep.so mode=$bind
    if [ $bind = relro ]; then
        lib=$WORK/libdeep-relro.so mode=now
    fi
    traced "$WORK/deep-$bind.zst" "$WORK/deep-$bind.out" "$WORK/deepbind" "$lib" $mode 1000 3
    grep -q "RTLD_DEEPBIND): 2 allocator binding(s) that skipped libchurn" "$WORK/deep-$bind.out.err" ||
        fail "deepbind $bind: libchurn did not say it redirected the library's malloc and free: $(cat "$WORK/deep-$bind.out.err")"
    analyze "$WORK/deep-$bind.zst" "$WORK/deep-$bind.json"
    check "$WORK/deep-$bind.json" $bind <<'PY'
import sys
from churncheck import *
report, bind = load(sys.argv[1]), sys.argv[2]
rounds, keep = 1000, 3
at = [g for g in field(report, "growth") if any(f.startswith("deep_churn ") for f in g["stack"])]
got = tuple(sum(g[k] for g in at) for k in ("allocs", "frees", "live_count", "live_bytes"))
expect("deepbind %s: allocs, frees, live count and live bytes of the library's callsites" % bind,
       got, (2 * rounds + keep, 2 * rounds, keep, 100 * keep))
print("deepbind %s: %d allocations, %d frees, %d live at exit (%d bytes), as the library made them"
      % ((bind,) + got))
PY
done

gcc $PROG_CFLAGS -fPIC -shared -o "$WORK/libown.so" test/programs/deepbind_own.c ||
    fail "cannot build the RTLD_DEEPBIND library with its own allocator"
traced "$WORK/own.zst" "$WORK/own.out" "$WORK/deepbind" "$WORK/libown.so" now 100 3
grep -q "RTLD_DEEPBIND): 0 allocator binding(s) .*not traced: its malloc binds to another allocator in $WORK/libown.so" "$WORK/own.out.err" ||
    fail "deepbind own: libchurn did not name the library's own allocator: $(cat "$WORK/own.out.err")"
analyze "$WORK/own.zst" "$WORK/own.json"
check "$WORK/own.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
at = [g for g in field(report, "growth") if any(f.startswith("deep_churn ") for f in g["stack"])]
expect("allocations traced from a library that uses its own allocator", sum(g["allocs"] for g in at), 0)
print("deepbind own: the library's own malloc and free are left to it, and named")
PY
