#!/bin/sh
# A real JavaScript runtime from npm that carries an allocator libchurn cannot know: Bun
# (pinned, test/bun/install.sh) links mimalloc into its executable without mimalloc's names.
# test/bun/buffers.js keeps 120 MiB of buffers over three seconds.  Under the shim the output
# must be what Bun prints natively, and the growth reported as not traced: once on stderr, naming
# Bun as the likely culprit and mimalloc (its warnings are among Bun's bytes, none of its names
# in the symbols) as what libchurn cannot trace, and at the top of the report, which names
# mimalloc too, with fragmentation[].untraced_bytes most of what the script keeps.  An
# unreachable npm registry fails the test: the real component is required.  Bun leaves through
# glibc's quick_exit, which ends in glibc's internal _exit: the trace must be complete and end
# with quick_exit and status 0.
. test/lib.sh

BUN=$(test/bun/install.sh 2>"$WORK/install.err") || fail "$(tail -n 1 "$WORK/install.err")"

"$BUN" test/bun/buffers.js >"$WORK/native.out" 2>"$WORK/native.err" ||
    fail "bun natively: $(tail -n 1 "$WORK/native.err")"
# Epochs of 250 ms: the report reads the detector's figures from epoch summaries.
CHURN_EPOCH_MS=250 traced "$WORK/bun.zst" "$WORK/bun.out" "$BUN" test/bun/buffers.js
cmp -s "$WORK/native.out" "$WORK/bun.out" ||
    fail "bun's output changed under the shim: $(head -n 1 "$WORK/bun.out") vs $(head -n 1 "$WORK/native.out")"
err="$WORK/bun.out.err"
[ "$(grep -c 'that nothing traced explains' "$err")" -eq 1 ] ||
    fail "bun: not one blind-spot line on stderr: $(head -n 1 "$err")"
grep -q "likely culprit: $BUN, which calls mmap" "$err" ||
    fail "bun: the culprit is not bun: $(grep 'culprit' "$err" || echo none)"
grep -q "likely culprit: $BUN, which calls mmap and carries mimalloc without the names libchurn traces it by" "$err" ||
    fail "bun: the culprit's mimalloc is not named: $(grep 'culprit' "$err" || echo none)"
"$ANALYZE" "$WORK/bun.zst" >"$WORK/bun.txt" 2>&1 || fail "churn-analyze bun.zst failed"
sed -n 3p "$WORK/bun.txt" | grep -q "WARNING: about .* MiB of RSS growth is not traced.*likely in bun, which carries mimalloc" ||
    fail "no 'not traced' warning at the top of the report: $(sed -n 3p "$WORK/bun.txt")"
analyze "$WORK/bun.zst" "$WORK/bun.json"
check "$WORK/bun.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
expect("bun: metadata.exit", field(report, "metadata", "exit"), {"how": "quick_exit", "detail": 0})
kept = 30000 * 4096
untraced = max(r.get("untraced_bytes") or 0 for r in field(report, "fragmentation"))
if not kept // 2 <= untraced <= kept * 2:
    fail("bun: untraced_bytes %d, expected about the %d B the script keeps" % (untraced, kept))
print("bun: %d B of the %d B kept reported not traced" % (untraced, kept))
PY
