#!/bin/sh
# sqlite's page cache, end to end (docs/analyzer.md, "The verdict"): Debian's sqlite3 inserts
# 900,000 rows of 100 random bytes into an in-memory database under `churn run --epoch-ms 50`,
# its page cache growing all along.  (So many that the run spans some twenty epochs or more:
# 300,000 rows span 8 or 9, and where the machine's load makes the growth curve, the
# residuals' runs leave the slope's bound about 3.6 epochs' worth of evidence and Student's t
# at one degree of freedom: 1 run in 8 beside two busy loops reads "does not measurably
# grow" for a cache growing from 2.4 to 35 MiB.)  Debian strips libsqlite3.so.0,
# whose own malloc wrapper every allocation goes through:
#  - the verdict names the growth's function by module and offset with the named callers
#    that say which of its callers grows (sqlite3BtreeInsert), at about the live growth per
#    epoch, above its bound;
#  - its next step is the Debian package whose debug files name it, libsqlite3-0-dbgsym (or a
#    debuginfod server), in the text report and the JSON's debug_info alike.
. test/lib.sh

command -v sqlite3 >/dev/null || fail "sqlite3 is missing (Debian sqlite3)"
lib=$(ldd "$(command -v sqlite3)" | sed -n 's/.*=> \(.*libsqlite3\.so\.0\) .*/\1/p')
[ -n "$lib" ] || fail "sqlite3 does not load libsqlite3.so.0"
id=$(readelf -n "$lib" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
if [ -e "/usr/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug" ]; then
    fail "libsqlite3.so.0's debug file is installed: this test wants it without (no package hint then)"
fi

status=0
env -u DEBUGINFOD_URLS timeout 120 "$ROOT/build/churn" run --epoch-ms 50 -o "$WORK/sq.zst" -- \
    sqlite3 :memory: "PRAGMA cache_size=-200000; CREATE TABLE t(a, b);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 900000)
INSERT INTO t SELECT x, randomblob(100) FROM c; SELECT count(*) FROM t;" \
    >"$WORK/sq.out" 2>"$WORK/sq.err" || status=$?
[ $status -eq 0 ] || fail "sqlite3 under churn run exited $status: $(tail -n 1 "$WORK/sq.err")"
[ "$(cat "$WORK/sq.out")" = 900000 ] || fail "sqlite3 printed '$(cat "$WORK/sq.out")', not 900000"
env -u DEBUGINFOD_URLS "$ANALYZE" --json "$WORK/sq.zst" >"$WORK/sq.json" 2>"$WORK/sq.json.err" ||
    fail "churn-analyze --json failed: $(tail -n 1 "$WORK/sq.json.err")"
env -u DEBUGINFOD_URLS "$ANALYZE" "$WORK/sq.zst" >"$WORK/sq.txt" 2>&1 ||
    fail "churn-analyze failed: $(tail -n 1 "$WORK/sq.txt")"

check "$WORK/sq.json" "$WORK/sq.txt" <<'PY'
import re, sys
from churncheck import *
report, text = load(sys.argv[1]), open(sys.argv[2]).read()
v = field(report, "verdict")
said = field(v, "sentences")
for s in said:
    if s not in text:
        fail("the text report lacks the verdict's %r" % s)
f = field(v, "functions")[0]
if f["module"] is None or not f["module"].endswith("libsqlite3.so.0") or f["function"] is not None \
        and not f["function"].startswith("libsqlite3"):
    fail("the verdict's first function is not libsqlite3.so.0's by offset: %r" % f)
if "sqlite3BtreeInsert" not in f["called_by"]:
    fail("the verdict's function is not named with sqlite3BtreeInsert: %r" % f["called_by"])
live = field(v, "live_bytes_per_epoch")
if f["bytes_per_epoch"] <= f["bytes_per_epoch_bound"] or f["share"] < 0.9 or \
        abs(f["bytes_per_epoch"] - live) > 0.1 * live:
    fail("the function holds %r +- %r per epoch (share %r), live bytes grow %r" %
         (f["bytes_per_epoch"], f["bytes_per_epoch_bound"], f["share"], live))
if not re.search(r"libsqlite3\.so\.0\+0x[0-9a-f]+, called by [^.]*sqlite3BtreeInsert", said[1]):
    fail("the verdict does not name libsqlite3.so.0+offset with sqlite3BtreeInsert: %r" % said[1])
steps = [s for s in said if s.startswith("Next: debug files")]
if len(steps) != 1 or "libsqlite3-0-dbgsym (for libsqlite3.so.0)" not in steps[0] or \
        "DEBUGINFOD_URLS" not in steps[0]:
    fail("no next step naming libsqlite3-0-dbgsym: %r" % said)
rows = [m for m in field(report, "debug_info") if m["module"].endswith("/libsqlite3.so.0")]
if not rows or rows[0]["dbgsym"] != "libsqlite3-0-dbgsym":
    fail("debug_info for libsqlite3.so.0: %r" % rows)
print("sqlite3: %s" % " ".join(said))
PY
echo "ok: sqlite3's page cache: the verdict names its function by offset and the -dbgsym package"
