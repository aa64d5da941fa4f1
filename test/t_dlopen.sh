#!/bin/sh
# dlopen and dlclose during tracing (test/programs/dl.c, dl_lib.c).  Two libraries each
# allocate through their own function and are unloaded before the program ends, between two
# passes of libchurn's writer.  Their allocations must still symbolize to that library's
# function: `apart`, B loaded while A is still there (different addresses); `reuse`, A
# unloaded first and B loaded at the address A had, so the same address means A's code
# before the dlclose and B's after; `seen`, the same with A in libchurn's module map before
# its allocations are first seen, so their stacks count as many modules as A's unload does.
# `moved`: the same with stripped libraries and B linked
# at another address, loaded where A was with another bias, so that a frame prints as
# function (module+offset) or, for the static fill that no symbol names, by its start
# module+start (module+offset): in every output that shows them (JSON, text, folded, pprof)
# the module, the start (nm's) and the offset must be those of the library the frame's stack ran
# in, A's before the dlclose and B's after, and so must the module a suppression matches.  `deepbind` (test/programs/deepbind.c, deepbind_lib.c): a
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
# traced_dl TRACE OUT MODE LIB_A LIB_B: dl traced; for the modes that need B where A was, run
# again (up to 5 runs) when the loader put B elsewhere: A's range is free only until the next
# mmap of any thread, libchurn's writer included, so a run can miss it by chance.  The checks
# below still fail a run that did not reuse the address.
traced_dl() {
    tries=0
    while :; do
        traced "$1" "$2" "$WORK/dl" "$3" "$4" "$5"
        [ "$3" = apart ] && break
        set -- "$@" $(sed -n 's/^starts //p' "$2")
        [ "$6" = "$7" ] && break
        set -- "$1" "$2" "$3" "$4" "$5"
        tries=$((tries + 1))
        [ "$tries" -lt 5 ] || break
    done
}

for mode in apart reuse seen; do
    traced_dl "$WORK/$mode.zst" "$WORK/$mode.out" $mode "$WORK/liba.so" "$WORK/libb.so"
    analyze "$WORK/$mode.zst" "$WORK/$mode.json"
    check "$WORK/$mode.json" "$WORK/$mode.out" "$mode" <<'PY'
import sys
from churncheck import *
report, mode = load(sys.argv[1]), sys.argv[3]
base_a, base_b = [int(w) for w in open(sys.argv[2]).read().split("bases ")[1].split()[:2]]
if mode in ("reuse", "seen") and base_a != base_b:
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

# No -g, stripped, the allocation made by a static function (dl_lib.c, UNNAMED_FILL): frames
# then show function (module+offset), or module+offset for the static function, with the
# module and its bias of their stack's time.  The symbols come from the unstripped builds.
NODEBUG_CFLAGS="-O2 -fno-omit-frame-pointer -Wall -Wextra -Werror -fPIC -shared -DUNNAMED_FILL"
gcc $NODEBUG_CFLAGS -o "$WORK/libmoved_a.syms.so" test/programs/dl_lib.c ||
    fail "cannot build library A without debug info"
gcc $NODEBUG_CFLAGS -DLIB_B -Wl,-Ttext-segment=0x10000000 -o "$WORK/libmoved_b.syms.so" \
    test/programs/dl_lib.c || fail "cannot build library B linked at 0x10000000"
for lib in a b; do
    strip --strip-all -o "$WORK/libmoved_$lib.so" "$WORK/libmoved_$lib.syms.so" ||
        fail "cannot strip library $lib"
    nm -S --defined-only "$WORK/libmoved_$lib.syms.so" |
        awk '$4 ~ /^(alloc_in_[ab]|fill)$|^fill\./ { sub(/\..*/, "", $4); print $4, $1, $2 }' \
        >"$WORK/libmoved_$lib.syms"
done
traced_dl "$WORK/moved.zst" "$WORK/moved.out" moved "$WORK/libmoved_a.so" "$WORK/libmoved_b.so"
analyze "$WORK/moved.zst" "$WORK/moved.json"
moved() { # NAME ARGS...: churn-analyze ARGS of the moved trace into $WORK/moved.NAME
    name=$1
    shift
    "$ANALYZE" "$@" "$WORK/moved.zst" >"$WORK/moved.$name" 2>"$WORK/moved.$name.err" ||
        fail "churn-analyze $* of the moved trace failed: $(tail -n 1 "$WORK/moved.$name.err")"
}
moved txt
moved folded --folded=allocs
printf 'leak:libmoved_a.so\n' >"$WORK/moved_a.supp"
printf 'leak:libmoved_b.so\n' >"$WORK/moved_b.supp"
moved supp_a.json --json --suppressions "$WORK/moved_a.supp"
moved supp_b.json --json --suppressions "$WORK/moved_b.supp"
build_pprof
"$ANALYZE" --pprof -o "$WORK/moved.pb.gz" "$WORK/moved.zst" 2>"$WORK/moved.pprof.err" ||
    fail "churn-analyze --pprof of the moved trace failed: $(tail -n 1 "$WORK/moved.pprof.err")"
"$WORK/pprof" -raw "$WORK/moved.pb.gz" >"$WORK/moved.raw" 2>"$WORK/moved.raw.err" ||
    fail "pprof -raw cannot read the moved profile: $(tail -n 1 "$WORK/moved.raw.err")"
check "$WORK" <<'PY'
import os, re, sys
from churncheck import *
work = sys.argv[1]
def text(name):
    return open(os.path.join(work, name)).read()
report, out = load(os.path.join(work, "moved.json")), text("moved.out")
LIBS = {"libmoved_a.so": ("alloc_in_a", 5), "libmoved_b.so": ("alloc_in_b", 7)}
symbols = {}  # (module, function) -> (start, size)
for module in LIBS:
    for line in text(module.replace(".so", ".syms")).split("\n"):
        if line:
            name, start, size = line.split()
            symbols[module, name] = (int(start, 16), int(size, 16))
    for name in (LIBS[module][0], "fill"):
        if (module, name) not in symbols:
            fail("moved: nm finds no %s in %s" % (name, module))
base_a, base_b = [int(w) for w in out.split("bases ")[1].split()[:2]]
start_a, start_b = [int(w) for w in out.split("starts ")[1].split()[:2]]
if start_a != start_b:
    fail("moved: library B was mapped at %#x, not where A had been (%#x): the loader placed it "
         "elsewhere, so this run does not test a reused address" % (start_b, start_a))
if base_a == base_b:
    fail("moved: both libraries have the bias %#x: this run does not test another bias" % base_a)

def inside(what, module, function, got_module, offset):
    """offset: of the call instruction in got_module, which must be module's, inside function"""
    start, size = symbols[module, function]
    if got_module != module or not start <= offset < start + size:
        fail("moved: %s is %s+0x%x, not inside %s (%s+0x%x..0x%x): module and offset from "
             "another generation of the module map than the stack's"
             % (what, got_module, offset, function, module, start, start + size))

def where(what, module, function, s):
    """s: "module+0xoffset" of a return address (the call is the byte before it)"""
    m = re.fullmatch(r"(\S+)\+0x([0-9a-f]+)", s)
    if not m:
        fail("moved: %s %r is not module+0xoffset" % (what, s))
    inside(what, module, function, m.group(1), int(m.group(2), 16) - 1)

def starts(what, module, function, s):
    """s: "module+0xstart" naming a function no symbol names, by its start (nm's)"""
    expect("moved: %s" % what, s, "%s+0x%x" % (module, symbols[module, function][0]))

def unnamed(what, module, function, s):
    """s: the frame of a return address in a function no symbol names, as
    module+0xstart (module+0xoffset)"""
    m = re.fullmatch(r"(\S+) \((\S+)\)", s)
    if not m:
        fail("moved: %s %r is not module+0xstart (module+0xoffset)" % (what, s))
    starts(what, module, function, m.group(1))
    where(what, module, function, m.group(2))

for module, (function, count) in LIBS.items():
    # the JSON callsites' frames and the text report: the static fill (module+offset), then
    # alloc_in_X (module+offset), both of the library the stack ran in
    at = [g for g in field(report, "growth") if len(g["stack"]) > 1 and
          g["stack"][1].startswith(function + " ")]
    expect("moved: allocations through %s" % function, sum(g["allocs"] for g in at), count)
    for g in at:
        unnamed("the callsite frame %r" % g["stack"][0], module, "fill", g["stack"][0])
        m = re.fullmatch(r"%s \((\S+)\)" % function, g["stack"][1])
        if not m:
            fail("moved: the frame %r is not %s (module+offset)" % (g["stack"][1], function))
        where("the callsite frame %r" % g["stack"][1], module, function, m.group(1))
        for frame in g["stack"][:2]:
            if frame not in text("moved.txt"):
                fail("moved: the text report does not show the frame %r" % frame)
    # the JSON functions rows and the text report's: one row, fill's, as module+start
    rows = [f for f in field(report, "functions") if f["module"] == module]
    expect("moved: function rows of %s" % module, [f["allocs"] for f in rows], [count])
    starts("the function row %r" % rows[0]["function"], module, "fill", rows[0]["function"])
    if not re.search(r"#\d+ %s\b" % re.escape(rows[0]["function"]), text("moved.txt")):
        fail("moved: the text report has no function row %s" % rows[0]["function"])
    # folded (the tree export, as the flame graphs and --html draw it): fill is the leaf
    folded = [l.rsplit(" ", 1) for l in text("moved.folded").split("\n")
              if (";" + function + ";") in (";" + l.split(" ")[0] + ";")]
    expect("moved: folded allocations through %s" % function, sum(int(v) for _, v in folded), count)
    for stack, _ in folded:
        starts("the folded leaf of %r" % stack, module, "fill", stack.split(";")[-1])
    # suppressions by module: a rule naming one library suppresses its callsites, not the
    # other's at the same addresses
    for rule_module in LIBS:
        rule = "leak:" + rule_module
        supp = load(os.path.join(work, "moved.supp_%s.json" % rule_module[len("libmoved_")]))
        got = [g["suppressed"] for g in field(supp, "growth") if len(g["stack"]) > 1 and
               g["stack"][1].startswith(function + " ")]
        expect("moved: %s's callsites under the rule %s" % (module, rule), got,
               [rule if rule_module == module else None] * len(at))

# pprof: each location of the libraries' code is in the mapping of the library it ran in, and
# that mapping's bias puts its address inside the function its line names
lines = text("moved.raw").split("\n")
mappings = {}
for l in lines[lines.index("Mappings") + 1:] if "Mappings" in lines else []:
    m = re.match(r"^(\d+): 0x([0-9a-f]+)/0x([0-9a-f]+)/0x([0-9a-f]+) (\S+)", l)
    if m:
        mappings[m.group(1)] = (int(m.group(2), 16), int(m.group(4), 16), m.group(5))
seen = {}
for l in lines:
    m = re.match(r"^\s+\d+: 0x([0-9a-f]+) M=(\d+) (\S+)", l)
    if not m:
        continue
    name = m.group(3)
    for module, (function, _) in LIBS.items():
        if name == function:
            where_fn = function
        elif name.startswith(module + "+0x"):
            where_fn = "fill"
        else:
            continue
        if m.group(2) not in mappings:
            fail("moved: pprof location %r has no mapping" % l.strip())
        start, offset, file = mappings[m.group(2)]
        # the address is the call's last byte (analyzer/export/pprof.c); offset: start - bias
        inside("pprof location %r (mapping %s)" % (l.strip(), file), module, where_fn, file,
               int(m.group(1), 16) - start + offset)
        if where_fn == "fill":
            starts("pprof's function name %r" % name, module, "fill", name)
        seen[module, where_fn] = True
expect("moved: pprof locations of fill and alloc_in_X in both libraries", len(seen), 4)
print("moved: B at A's address %#x with bias %#x (A's %#x); both libraries' frames, function "
      "rows, folded stacks, pprof locations and suppressions name their own module and offset"
      % (start_a, base_b, base_a))
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
    # Every binding reaches libchurn (the counts below say so): nothing to tell the user.
    ! grep -q "libchurn:" "$WORK/deep-$bind.out.err" ||
        fail "deepbind $bind: libchurn spoke though it traces everything: $(grep -m1 libchurn: "$WORK/deep-$bind.out.err")"
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
