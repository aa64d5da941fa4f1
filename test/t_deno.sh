#!/bin/sh
# A real JavaScript runtime from npm whose executable is stripped and carries V8: deno
# (pinned, test/deno/install.sh).  test/deno/objects.js keeps objects on V8's heap for four
# seconds.  Under the shim its output and status must be what deno gives natively, and the
# growth named as V8's own heap (outside malloc by design), not an allocator libchurn does not
# know: once on stderr, deno the culprit by V8's message among its bytes, and at the top of the
# report, with "not traced: objects on the JS heap" and fragmentation[].untraced_bytes.  An
# unreachable npm registry fails the test: the real component is required.
. test/lib.sh

DENO=$(test/deno/install.sh 2>"$WORK/install.err") || fail "$(tail -n 1 "$WORK/install.err")"
readelf -S "$DENO" | grep -q '\.symtab' && fail "$DENO keeps a .symtab: not the case under test"

"$DENO" run test/deno/objects.js >"$WORK/native.out" 2>"$WORK/native.err" ||
    fail "deno natively: $(tail -n 1 "$WORK/native.err")"
traced "$WORK/deno.zst" "$WORK/deno.out" "$DENO" run test/deno/objects.js
cmp -s "$WORK/native.out" "$WORK/deno.out" ||
    fail "deno's output changed under the shim: $(head -n 1 "$WORK/deno.out") vs $(head -n 1 "$WORK/native.out")"
err="$WORK/deno.out.err"
[ "$(grep -c "in mappings of V8's own heap (outside malloc by design: the 'outside' part of the RSS split; traced heap +[0-9.]* MiB); not traced: objects on the JS heap" "$err")" -eq 1 ] ||
    fail "deno: not one line naming V8's heap on stderr: $(head -n 1 "$err")"
grep -q "likely culprit: $DENO, which calls mmap and carries V8 (its garbage collector's messages are in its bytes: it is stripped)" "$err" ||
    fail "deno: the culprit line does not name V8 in deno: $(grep culprit "$err" || echo none)"
"$ANALYZE" "$WORK/deno.zst" >"$WORK/deno.txt" 2>&1 || fail "churn-analyze deno.zst failed"
sed -n 3p "$WORK/deno.txt" | grep -q "WARNING: about .* MiB of RSS growth (the shim's estimate) is in mappings of V8's own heap, in deno (outside malloc by design.*not traced: objects on the JS heap" ||
    fail "no V8-heap warning at the top of the report: $(sed -n 3p "$WORK/deno.txt")"
analyze "$WORK/deno.zst" "$WORK/deno.json"
check "$WORK/deno.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
expect("deno: metadata.exit", field(report, "metadata", "exit"), {"how": "normal", "detail": 0})
untraced = max(r.get("untraced_bytes") or 0 for r in field(report, "fragmentation"))
if untraced < (8 << 20):
    fail("deno: untraced_bytes %d" % untraced)
print("deno: about %.1f MiB named V8's own heap; %d allocations traced through malloc"
      % (untraced / 1048576.0, field(report, "totals", "allocs")))
PY
