#!/bin/sh
# A function whose name is 1,500 characters long, and one in a source file whose path is
# 1,300: every output that shows a frame keeps its file:line whole and shortens the name (or
# the path) in its middle, with "...", keeping both ends: the text report, JSON, HTML (and
# the page's function rows keep the module); --folded, --svg and pprof, which name functions
# alone, keep both ends of the name.
LIB_ANALYZER_ONLY=1
. test/lib.sh
T=$WORK

NAME=long_$(python3 -c 'print("abcdefghij" * 149)')_end
DEEP=$T
for i in 1 2 3 4 5 6; do
    DEEP=$DEEP/$(python3 -c "print('d$i' + 'x' * 200)")
done
mkdir -p "$DEEP"
cat >"$T/long.c" <<EOF
#include <stdlib.h>
void *in_deep_file(size_t n);
__attribute__((noinline)) void *$NAME(size_t n) { void *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
EOF
cat >"$DEEP/deep.c" <<'EOF'
#include <stdlib.h>
__attribute__((noinline)) void *in_deep_file(size_t n) { void *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
EOF
gcc -O0 -g -fPIC -shared -Wl,--build-id -o "$T/liblong.so" "$T/long.c" "$DEEP/deep.c" \
    >"$T/build.log" 2>&1 || fail "cannot build liblong.so: $(tail -n 1 "$T/build.log")"
id=$(readelf -n "$T/liblong.so" | awk '/Build ID/ { print $3 }')
long_off=$(nm "$T/liblong.so" | awk -v n="$NAME" '$3 == n { print $1 }')
deep_off=$(nm "$T/liblong.so" | awk '$3 == "in_deep_file" { print $1 }')
[ -n "$id" ] && [ -n "$long_off" ] && [ -n "$deep_off" ] || fail "liblong.so: no build id or symbols"

python3 - "$T" "$id" "$long_off" "$deep_off" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
T, build_id, long_off, deep_off = sys.argv[1], sys.argv[2], int(sys.argv[3], 16), int(sys.argv[4], 16)
B = 0x7f0000000000
recs = mktrace.prelude(0, 0, modules=[(0, B, B, B + 0x10000, build_id,
                                       os.path.join(T, "liblong.so"))])
recs += [["stack", 1, [B + long_off + 8]], ["stack", 2, [B + deep_off + 8]],
         ["thread", 1], ["epoch", 0],
         ["alloc", 0, 0x100000, 32, 0, 1], ["alloc", 0, 0x100040, 64, 0, 2], ["exit", 1, 0]]
open(os.path.join(T, "long.zst"), "wb").write(
    mktrace.build({"segments": [{"seq": 0, "records": recs}]}))
PY

for mode in text json html folded svg pprof; do
    opt=--$mode
    [ $mode = text ] && opt=
    # shellcheck disable=SC2086
    "$ANALYZE" $opt -o "$T/out.$mode" "$T/long.zst" 2>"$T/$mode.err" ||
        fail "$mode: $(tail -n 1 "$T/$mode.err")"
done
gzip -dc "$T/out.pprof" >"$T/pprof.raw" || fail "the pprof profile is not gzipped"

check "$T" "$NAME" "$DEEP/deep.c" <<'PY'
import html, json, re, sys
T, name, deep = sys.argv[1:]
head, tail = name[:40], name[-40:]
# a frame of the long name: both ends of it, "..." between, then its whole location
long_frame = re.compile(re.escape(head) + r"[a-j]*\.\.\.[a-j]*" + re.escape(tail) +
                        r" \(" + re.escape(T) + r"/long\.c:3\)")
# the deep file's frame: its name, "...", the end of the path and the line
deep_frame = re.compile(r"in_deep_file \(" + re.escape(deep[:20]) + r".*\.\.\..*" +
                        re.escape(deep[-200:]) + r":2\)")

def expect(what, text, pattern, most=1023):
    found = [m.group(0) for m in pattern.finditer(text)]
    if not found:
        sys.exit("FAIL: %s: no frame matching %s" % (what, pattern.pattern[:120]))
    if any(len(f) > most for f in found):
        sys.exit("FAIL: %s: a frame of %d characters" % (what, max(map(len, found))))

d = json.load(open(T + "/out.json"))
frames = "\n".join(f for c in d["growth"] for f in c["stack"])
expect("json", frames, long_frame)
expect("json", frames, deep_frame)
text = open(T + "/out.text").read()
expect("text", text, long_frame)
expect("text", text, deep_frame)
page = html.unescape(open(T + "/out.html").read())
expect("html", page, long_frame)
expect("html", page, deep_frame)
# everywhere on the page (stacks, function rows, callers, the flame graph's names), the long
# name keeps both its ends and what follows it: its location or its module
whole = re.compile(re.escape(head) + r"[a-j]*\.\.\.[a-j]*" + re.escape(tail) + r"( \(|\")")
if len(whole.findall(page)) != page.count(head):
    sys.exit("FAIL: html: %d of the long name's %d places keep its end and what follows" %
             (len(whole.findall(page)), page.count(head)))
# names alone: both ends kept
for mode in ("folded", "svg"):
    out = html.unescape(open(T + "/out." + mode).read())
    if not re.search(re.escape(head) + r"[a-j]*(\.\.\.)?[a-j]*" + re.escape(tail), out):
        sys.exit("FAIL: %s: the long name's two ends are not in one frame" % mode)
raw = open(T + "/pprof.raw", "rb").read()
if not re.search(re.escape(head.encode()) + rb"[a-j]*(\.\.\.)?[a-j]*" + re.escape(tail.encode()), raw):
    sys.exit("FAIL: pprof: the long name's two ends are not in one function name")
if (T + "/long.c").encode() not in raw:
    sys.exit("FAIL: pprof: no file long.c")
PY
echo "PASS: t_long_names"
