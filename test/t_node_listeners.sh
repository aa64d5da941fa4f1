#!/bin/sh
# A node listener leak, end to end (docs/analyzer.md, "The verdict"): the pinned nodejs.org
# build (test/node/install.sh) runs test/node/listeners.js, which adds a listener closing over
# 2,000 objects every 10 ms and never removes one, under `churn run --epoch-ms 100`.  What it
# keeps is on V8's own heap, pages V8 maps itself, outside malloc:
#  - node prints what it prints natively (300 listeners) and exits 0;
#  - the page's first words, before its summary, are the verdict's: V8's own heap and a heap
#    snapshot as the next step;
#  - the verdict's largest other part is the program's own mmap calls, growing above its
#    bound, made by V8 (v8::base::OS::Allocate or a frame of V8's on the way), and RSS grows
#    measurably.
. test/lib.sh

NODE=$(test/node/install.sh 2>"$WORK/install.err") || fail "$(tail -n 1 "$WORK/install.err")"
native=$("$NODE" test/node/listeners.js) || fail "node test/node/listeners.js failed natively"
[ "$native" = 300 ] || fail "node test/node/listeners.js printed '$native' natively, not 300"
status=0
timeout 120 "$ROOT/build/churn" run --epoch-ms 100 -o "$WORK/node.zst" \
    "$NODE" test/node/listeners.js >"$WORK/node.out" 2>"$WORK/node.err" || status=$?
[ $status -eq 0 ] || fail "node under churn run exited $status: $(tail -n 1 "$WORK/node.err")"
[ "$(cat "$WORK/node.out")" = "$native" ] ||
    fail "node under churn run printed '$(cat "$WORK/node.out")', natively '$native'"
analyze "$WORK/node.zst" "$WORK/node.json"
"$ANALYZE" --html "$WORK/node.zst" >"$WORK/node.html" 2>"$WORK/node.html.err" ||
    fail "churn-analyze --html failed: $(tail -n 1 "$WORK/node.html.err")"

check "$WORK/node.json" "$WORK/node.html" <<'PY'
import html, sys
from churncheck import *
report, page = load(sys.argv[1]), open(sys.argv[2]).read()
v = field(report, "verdict")
said = " ".join(field(v, "sentences"))
first = html.unescape(page[page.index("<body"):page.index("<h2>Summary")])
if "V8's own heap" not in first or "heap snapshot" not in first:
    fail("the page's first words do not name V8's own heap and a heap snapshot:\n%s" % first[:3000])
if field(v, "rss_direction") != "grows":
    fail("RSS does not measurably grow: %r" % said)
parts, bounds = field(v, "parts"), field(v, "bounds")
mine = parts["program_mmap"]
if mine <= bounds["program_mmap"] or any(parts[k] > mine for k in parts
                                         if k not in ("outside", "program_mapped", "program_mmap")):
    fail("the program's own mmap calls are not the largest part above its bound: %r +- %r" %
         (parts, bounds))
m = field(v, "mappings")
if not m or not any("v8::" in f for f in [m[0]["function"]] + m[0]["stack"]):
    fail("the mappings' function is not V8's: %r" % m)
print("node listeners: %s" % said)
PY
echo "ok: a node listener leak: V8's own heap and a heap snapshot first on the page"
