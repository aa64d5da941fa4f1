#!/bin/sh
# Stripped modules: a frame no symbol names is named by the start of its function, from the
# module's .eh_frame (analyzer/symbols/symbolize.c), and function rows are one per function; an
# unnamed function that returns the block it got and keeps no copy is an allocation wrapper
# (analyzer/symbols/wrapshape.c), shown as via.
#   test/programs/stripped_alloc.c, built once and run with its symbol table and stripped
#     (strip keeps .eh_frame): the stripped run's function rows are the unstripped run's
#     (keep_one..keep_four via xmalloc_checked, remember on its own), each named by the
#     address nm gives its function, with the same counts; its frames name the wrapper's
#     start and the return address inside it
#   ruby 3.1 (libruby stripped): the strings' stack's innermost frame is its function's
#     start by binutils' reading of .eh_frame (readelf), and the top function row is the
#     caller of that wrapper, via it, not the wrapper; every frame of libruby that a symbol
#     names (.dynsym) is inside that symbol's size by readelf
#   lua 5.4 (its internal functions unexported): likewise for the kept strings
#   a sizeless exported symbol (test/programs/sizeless_sym.c) does not name the unnamed
#     function after it, whose start .eh_frame gives
. test/lib.sh

build_c stripped_alloc test/programs/stripped_alloc.c
mkdir -p "$WORK/stripped"
strip -o "$WORK/stripped/stripped_alloc" "$WORK/stripped_alloc" || fail "strip failed"
readelf -S -W "$WORK/stripped/stripped_alloc" >"$WORK/sections.txt" || fail "readelf failed"
! grep -q " \.symtab " "$WORK/sections.txt" || fail "the stripped copy still has .symtab"
grep -q " \.eh_frame " "$WORK/sections.txt" || fail "the stripped copy has no .eh_frame"
nm "$WORK/stripped_alloc" >"$WORK/nm.txt" || fail "nm failed"

traced "$WORK/named.zst" "$WORK/named.out" "$WORK/stripped_alloc"
traced "$WORK/stripped.zst" "$WORK/stripped.out" "$WORK/stripped/stripped_alloc"
analyze "$WORK/named.zst" "$WORK/named.json"
# The symbol cache is by build id, which the two copies share: the stripped run's names come
# from its own file only.
CHURN_SYMBOL_CACHE=off analyze "$WORK/stripped.zst" "$WORK/stripped.json"
CHURN_SYMBOL_CACHE=off "$ANALYZE" "$WORK/stripped.zst" >"$WORK/stripped.txt" 2>&1 ||
    fail "churn-analyze text report of the stripped run failed"

check "$WORK/named.json" "$WORK/stripped.json" "$WORK/nm.txt" "$WORK/stripped.txt" <<'PY'
import sys
from churncheck import *
named, stripped = load(sys.argv[1]), load(sys.argv[2])
addr = {}
for line in open(sys.argv[3]):
    parts = line.split()
    if len(parts) == 3:
        addr[parts[2]] = int(parts[0], 16)
text = open(sys.argv[4]).read()
label = lambda name: "stripped_alloc+0x%x" % addr[name]
want = {"keep_one": ("xmalloc_checked", 10, 32), "keep_two": ("xmalloc_checked", 20, 48),
        "keep_three": ("xmalloc_checked", 30, 64), "keep_four": ("xmalloc_checked", 40, 80),
        "remember": (None, 18, 24)}
named_rows = {f["function"]: f for f in field(named, "functions")}
stripped_rows = {f["function"]: f for f in field(stripped, "functions")}
for name, (via, count, size) in sorted(want.items()):
    for what, rows, key, via_key in (("with symbols", named_rows, name, via),
                                     ("stripped", stripped_rows, label(name), via and label(via))):
        if key not in rows:
            fail("%s: no function row %s (%s): rows %s" % (what, key, name, sorted(rows)))
        f = rows[key]
        expect("%s: %s via" % (what, name), (f["via"], f["via_others"]), (via_key, False))
        expect("%s: %s objects, live bytes" % (what, name), (f["allocs"], f["live_count"], f["live_bytes"]),
               (count, count, count * size))
    if via and ("%s via %s: " % (label(name), label(via))) not in text:
        fail("the text report has no row '%s via %s' (%s via %s)" % (label(name), label(via), name, via))
expect("stripped: remember's stacks (one per caller)", stripped_rows[label("remember")]["stacks"], 3)
if label("xmalloc_checked") in stripped_rows:
    fail("stripped: the wrapper xmalloc_checked (%s) is a function row" % label("xmalloc_checked"))
# keep_one's callsite: the wrapper's frame is its start with the return address inside it,
# then keep_one's start
g = [g for g in field(stripped, "growth") if g["allocs"] == 10]
expect("stripped: callsites of keep_one's 10 objects", len(g), 1)
inner, outer = g[0]["stack"][:2]
start, sep, where = inner.partition(" (")
expect("stripped: the wrapper's frame names its start", start, label("xmalloc_checked"))
pc = int(where.rstrip(")").split("+0x")[1], 16)
if not addr["xmalloc_checked"] < pc <= addr["remember"]:
    fail("stripped: the wrapper's return address 0x%x is not inside it: %s" % (pc, inner))
if not outer.startswith(label("keep_one") + " (stripped_alloc+0x"):
    fail("stripped: keep_one's frame is %r, not named by its start %s" % (outer, label("keep_one")))
print("stripped: %d function rows as with symbols, by nm's addresses (%s via %s: 10 objects)"
      % (len(want), label("keep_one"), label("xmalloc_checked")))
PY

# A sizeless exported symbol before a function no symbol names (test/programs/sizeless_sym.c):
# the function is named by its start (nm's, of the unstripped build), not after the symbol.
build_c sizeless_sym test/programs/sizeless_sym.c -fno-toplevel-reorder -Wl,--export-dynamic
strip -o "$WORK/stripped/sizeless_sym" "$WORK/sizeless_sym" || fail "strip failed"
nm "$WORK/sizeless_sym" >"$WORK/sizeless.nm" || fail "nm failed"
readelf -W --dyn-syms "$WORK/stripped/sizeless_sym" >"$WORK/sizeless.dynsym" || fail "readelf failed"
traced "$WORK/sizeless.zst" "$WORK/sizeless.out" "$WORK/stripped/sizeless_sym"
CHURN_SYMBOL_CACHE=off analyze "$WORK/sizeless.zst" "$WORK/sizeless.json"
check "$WORK/sizeless.json" "$WORK/sizeless.nm" "$WORK/sizeless.dynsym" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
addr = {l.split()[2]: int(l.split()[0], 16) for l in open(sys.argv[2]) if len(l.split()) == 3}
dyn = [l.split() for l in open(sys.argv[3]) if "sizeless_entry" in l]
expect("sizeless_entry in .dynsym (value, size)", [(int(d[1], 16), d[2]) for d in dyn],
       [(addr["sizeless_entry"], "0")])
if not addr["sizeless_entry"] < addr["keep_hidden"]:
    fail("keep_hidden (0x%x) is not after sizeless_entry (0x%x)" % (addr["keep_hidden"], addr["sizeless_entry"]))
rows = {f["function"]: f["allocs"] for f in field(report, "functions")}
if "sizeless_entry" in rows:
    fail("keep_hidden's blocks are named after the sizeless symbol before it: %s" % rows)
expect("the row of keep_hidden's 12 blocks", rows.get("sizeless_sym+0x%x" % addr["keep_hidden"]), 12)
print("a sizeless symbol before an unnamed function: its row is sizeless_sym+0x%x, keep_hidden's start"
      % addr["keep_hidden"])
PY

# readelf's FDE ranges of a module, "start end" per line (binutils: shares no code with the
# analyzer's elfutils).
fdes() {
    readelf -W --debug-dump=frames "$1" 2>/dev/null |
        sed -n 's/.* FDE .*pc=\([0-9a-f]*\)\.\.\([0-9a-f]*\)$/\1 \2/p' >"$2"
    [ -s "$2" ] || fail "readelf finds no FDE in $1"
}

# stripped_runtime NAME KEPT FDES REPORT: the stack of the KEPT strings, its innermost frame
# named by the start readelf gives the FDE holding its return address, and the top function
# row its caller's function via it.
stripped_runtime() {
    check "$4" "$3" "$1" "$2" <<'PY'
import sys
from churncheck import *
report, name, kept = load(sys.argv[1]), sys.argv[3], int(sys.argv[4])
fdes = [tuple(int(x, 16) for x in line.split()) for line in open(sys.argv[2])]
g = [g for g in field(report, "growth") if g["allocs"] == kept]
expect("%s: callsites of the %d kept strings" % (name, kept), len(g), 1)
frames = []
for frame in g[0]["stack"][:2]:
    start, sep, where = frame.partition(" (")
    if not sep or "+0x" not in start:
        fail("%s: the frame %r is not named by its function's start" % (name, frame))
    module, off = start.split("+0x")
    pc = int(where.rstrip(")").split("+0x")[1], 16)
    covering = [s for s, e in fdes if s <= pc - 1 < e]
    expect("%s: the start of the FDE holding 0x%x, by readelf" % (name, pc), covering, [int(off, 16)])
    frames.append(start)
top = field(report, "functions")[0]
expect("%s: the top function row and its via" % name, (top["function"], top["via"]),
       (frames[1], frames[0]))
rows = [f["function"] for f in field(report, "functions")]
if frames[0] in rows:
    fail("%s: the wrapper %s is still a function row" % (name, frames[0]))
# the unnamed row says what reached it: the kept strings' first named frame outward
named = [f.split(" (")[0] for f in g[0]["stack"][2:] if "+0x" not in f.split(" (")[0]]
expect("%s: the top row's caller, the strings' first named frame" % name, top["called_from"],
       named[0] if named else None)
if name == "ruby":  # ("x" * 1000): String#*
    expect("ruby: the top row's caller", top["called_from"], "rb_str_times")
print("%s: the kept strings' row is %s (called from %s) via %s (%d stacks), the wrapper no row" %
      (name, top["function"], top["called_from"], top["via"], top["stacks"]))
PY
}

# ---- ruby 3.1: libruby-3.1.so, stripped ----
command -v ruby3.1 >/dev/null || fail "ruby3.1 is not installed (make check installs it)"
CHURN_EPOCH_AT=rb_gc_count traced "$WORK/rb.zst" "$WORK/rb.out" ruby3.1 test/programs/grow.rb 50
analyze "$WORK/rb.zst" "$WORK/rb.json"
fdes "$(readlink -f "$(ldd "$(command -v ruby3.1)" | awk '/libruby/ { print $3 }')")" "$WORK/rb.fdes"
stripped_runtime ruby 5000 "$WORK/rb.fdes" "$WORK/rb.json"
readelf -W --dyn-syms "$(readlink -f "$(ldd "$(command -v ruby3.1)" | awk '/libruby/ { print $3 }')")" \
    >"$WORK/rb.dynsym" || fail "readelf --dyn-syms failed"
check "$WORK/rb.json" "$WORK/rb.dynsym" <<'PY'
import re, sys
from churncheck import *
report = load(sys.argv[1])
syms = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND":
        syms.setdefault(f[7].split("@")[0], []).append((int(f[1], 16), int(f[2])))
named = 0
for g in field(report, "growth"):
    for frame in g["stack"]:
        m = re.fullmatch(r"(\S+) \(libruby-3\.1\.so\.3\.1\+0x([0-9a-f]+)\)", frame)
        if not m or "+0x" in m.group(1):
            continue
        call = int(m.group(2), 16) - 1
        if not any(a <= call < a + n for a, n in syms.get(m.group(1), [])):
            fail("ruby: the frame %r is not inside a symbol %s by readelf" % (frame, m.group(1)))
        named += 1
if not named:
    fail("ruby: no frame of libruby is named by a symbol")
print("ruby: %d frames of libruby named by .dynsym, each inside its symbol's size" % named)
PY

# ---- lua 5.4: internal functions unexported ----
command -v lua5.4 >/dev/null || fail "lua5.4 is not installed (make check installs it)"
CHURN_EPOCH_AT=lua_gc traced "$WORK/lua.zst" "$WORK/lua.out" lua5.4 test/programs/grow.lua 50
analyze "$WORK/lua.zst" "$WORK/lua.json"
fdes "$(readlink -f "$(command -v lua5.4)")" "$WORK/lua.fdes"
stripped_runtime lua 5000 "$WORK/lua.fdes" "$WORK/lua.json"
