#!/bin/sh
# Frames at their call instruction: an allocation made in a function inlined into its caller
# (test/programs/inline_alloc.c, -O2) shows the inlined callee at its own line, then the
# caller at the line of the inlined call, in the text report, the JSON, the folded stacks and
# the pprof profile (and the inlined callee is a frame of the SVG and HTML flame graphs); and pprof, symbolizing the profile again from the binary
# (-symbolize=force), finds the same lines at the addresses the profile gives.
. test/lib.sh

command -v addr2line >/dev/null || fail "addr2line is missing (Debian binutils)"
build_pprof

SRC=test/programs/inline_alloc.c
build_c inline_alloc $SRC
mark() { grep -n "MARK:$1 " $SRC | cut -d: -f1; }

# The case under test: each malloc call ends its inlined callee's code, so the return
# address already belongs to a later line of the caller (addr2line, from binutils, is the
# independent reader here).
for fn in foo bar; do
    ret=$(objdump -d --no-show-raw-insn "$WORK/inline_alloc" |
          awk -v f="<$fn>:" '$2 == f { on = 1; next } on && /call.*<malloc@plt>/ { getline; sub(":", "", $1); print $1; exit }')
    [ -n "$ret" ] || fail "no call of malloc in $fn"
    at=$(addr2line -e "$WORK/inline_alloc" "0x$ret" | sed 's/.*://; s/ .*//')
    [ "$at" != "$(mark callee)" ] ||
        fail "the return address of $fn's malloc call is at the callee's line: the test does not test"
done

traced "$WORK/t.zst" "$WORK/t.out" "$WORK/inline_alloc"
"$ANALYZE" "$WORK/t.zst" >"$WORK/report.txt" 2>"$WORK/report.err" ||
    fail "churn-analyze failed: $(tail -n 1 "$WORK/report.err")"
analyze "$WORK/t.zst" "$WORK/t.json"
"$ANALYZE" --folded=alloc_bytes "$WORK/t.zst" >"$WORK/t.folded" 2>"$WORK/folded.err" ||
    fail "churn-analyze --folded failed: $(tail -n 1 "$WORK/folded.err")"
for form in svg html; do
    "$ANALYZE" --$form -o "$WORK/t.$form" "$WORK/t.zst" 2>"$WORK/$form.err" ||
        fail "churn-analyze --$form failed: $(tail -n 1 "$WORK/$form.err")"
    # the inlined callee, which a lookup at the return address loses, is a frame of its own
    grep -q "allocate_something" "$WORK/t.$form" || fail "--$form shows no allocate_something frame"
done
"$ANALYZE" --pprof -o "$WORK/t.pb.gz" "$WORK/t.zst" 2>"$WORK/pprof.err" ||
    fail "churn-analyze --pprof failed: $(tail -n 1 "$WORK/pprof.err")"
"$WORK/pprof" -raw "$WORK/t.pb.gz" >"$WORK/raw.txt" 2>"$WORK/raw.err" ||
    fail "pprof -raw cannot read the profile: $(tail -n 1 "$WORK/raw.err")"
PPROF_BINARY_PATH="$WORK" "$WORK/pprof" -symbolize=force -raw "$WORK/t.pb.gz" \
    >"$WORK/resymbolized.txt" 2>"$WORK/resymbolized.err" ||
    fail "pprof -symbolize=force failed: $(tail -n 1 "$WORK/resymbolized.err")"

check "$WORK" "$(mark callee)" "$(mark foo-site)" "$(mark copy-site)" "$(mark bar-site)" <<'PY'
import os, re, sys
from churncheck import *
work = sys.argv[1]
callee, foo_site, copy_site, bar_site = (int(v) for v in sys.argv[2:6])
chains = {
    "foo": [("allocate_something", callee), ("foo", foo_site)],
    "bar": [("allocate_something", callee), ("copy_name", copy_site), ("bar", bar_site)],
}
sizes = {"foo": sum(range(1000, 1010)), "bar": 7 * len("a name of some length") + 7}

def frame_text(fn, line):
    return "%s (test/programs/inline_alloc.c:%d)" % (fn, line)

# text: the stack printed under each callsite, innermost first
text = open(os.path.join(work, "report.txt")).read()
for name, chain in chains.items():
    want = "\n".join("        " + frame_text(fn, line) for fn, line in chain)
    if want not in text:
        fail("text report: no stack\n%s\nin:\n%s" % (want, text))

# JSON: the growth callsite of each allocation's bytes
report = load(os.path.join(work, "t.json"))
for name, chain in chains.items():
    sites = [g for g in field(report, "growth") if g["alloc_bytes"] == sizes[name]]
    if len(sites) != 1:
        fail("JSON: %d callsites of %d bytes, expected 1" % (len(sites), sizes[name]))
    expect("JSON stack of %s" % name, sites[0]["stack"][:len(chain)],
           [frame_text(fn, line) for fn, line in chain])

# folded: outermost first, so the chain reversed ends each line
folded = open(os.path.join(work, "t.folded")).read().split("\n")
for name, chain in chains.items():
    tail = ";main;" + ";".join(fn for fn, _ in reversed(chain)) + " %d" % sizes[name]
    if not any(l.endswith(tail) for l in folded):
        fail("folded: no stack ending %r in %s" % (tail, folded))

# pprof: a location's lines, innermost first, as pprof -raw prints them
def locations(path):
    locs, cur = {}, None
    lines = open(path).read().split("\n")
    for l in lines[lines.index("Locations") + 1:]:
        m = re.match(r"^\s+(\d+): (0x[0-9a-f]+) M=(\d+) (\S+) (\S*):(\d+)", l)
        if m:
            cur = locs[int(m.group(1))] = (m.group(2), int(m.group(3)), [])
            cur[2].append((m.group(4), int(m.group(6))))
            continue
        m = re.match(r"^\s{6,}(\S+) (\S*):(\d+)", l)
        if m and cur:
            cur[2].append((m.group(1), int(m.group(3))))
        else:
            break
    return locs
ours = locations(os.path.join(work, "raw.txt"))
for name, chain in chains.items():
    if not any(lines == chain for _, _, lines in ours.values()):
        fail("pprof: no location with the lines %s: %s" % (chain, ours))
again = locations(os.path.join(work, "resymbolized.txt"))
checked = 0
for id, (addr, mapping, lines) in ours.items():
    if mapping != 1:
        continue
    expect("pprof's own symbolization of location %d at %s" % (id, addr), again[id][2], lines)
    checked += 1
if checked < 4:
    fail("only %d locations of the program in the profile" % checked)
print("inline frames: text, JSON, folded and pprof show the inlined callees at their lines; "
      "pprof re-symbolized %d locations identically" % checked)
PY
