#!/bin/sh
# sqlite3's own books (the shell's .stats, from sqlite3_status64) against libchurn's figures
# (docs/servers.md).  Debian's sqlite3 3.40 grows a table of an in-memory database over four
# statements, deletes half of it and drops it, with .stats on, under `churn run --epoch-at
# sqlite3_status64`: every figure the shell prints after a statement is read at a call of that
# function, which ends an epoch, so each is compared with libchurn's at the end of the epoch
# before it.  sqlite3MemMalloc (its default allocator, mem1.c) mallocs ROUND8(n) + 8 bytes and
# keeps ROUND8(n) in the first 8; its counters count ROUND8(n) per allocation.  So, over the
# stacks whose innermost frame is in libsqlite3 (sqlite's malloc, realloc and free; the shell's
# and libc's own allocations are not in its books), exactly:
# - "Number of Outstanding Allocations" = their live objects;
# - "Memory Used" = their live requested bytes - 8 x their live objects;
# - "Largest Allocation" (the largest n asked for so far): ROUND8(n) + 8 is one of libchurn's
#   allocation sizes (a callsite's only allocation), at most the largest size class used;
# and libchurn's peak during a statement in which only sqlite allocated and freed bounds the
# high-water mark from below: max Memory Used >= peak - others - 8 x (peak objects - others').
. test/lib.sh

command -v sqlite3 >/dev/null || fail "sqlite3 is missing (Debian sqlite3)"
cat >"$WORK/grow.sql" <<'SQL'
.stats on
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000) INSERT INTO t SELECT x, printf('%0100d', x) FROM c;
WITH RECURSIVE c(x) AS (SELECT 5001 UNION ALL SELECT x + 1 FROM c WHERE x < 10000) INSERT INTO t SELECT x, printf('%0100d', x) FROM c;
WITH RECURSIVE c(x) AS (SELECT 10001 UNION ALL SELECT x + 1 FROM c WHERE x < 15000) INSERT INTO t SELECT x, printf('%0100d', x) FROM c;
WITH RECURSIVE c(x) AS (SELECT 15001 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) INSERT INTO t SELECT x, printf('%0100d', x) FROM c;
DELETE FROM t WHERE a % 2 = 0;
DROP TABLE t;
SQL
timeout 60 "$ROOT/build/churn" run -o "$WORK/sqlite.zst" --epoch-at sqlite3_status64 -- \
    sqlite3 :memory: <"$WORK/grow.sql" >"$WORK/stats.txt" 2>"$WORK/churn.err" ||
    fail "sqlite3 under churn run failed: $(tail -n 1 "$WORK/churn.err")"
# the shell prints one block per statement; sqlite3_status64 is called once per line of these
LINES='^(Memory Used|Number of Outstanding Allocations|Number of Pcache Overflow Bytes|Largest Allocation|Largest Pcache Allocation|Deepest Parser Stack):'
blocks=$(grep -c '^Memory Used:' "$WORK/stats.txt")
[ "$blocks" -eq 7 ] || fail "sqlite3 printed $blocks .stats blocks, expected 7"
per=$(($(grep -cE "$LINES" "$WORK/stats.txt") / blocks))
analyze "$WORK/sqlite.zst" "$WORK/all.json"
b=0
while [ $b -lt $blocks ]; do
    for i in 0 1; do
        e=$((b * per + i))
        analyze "$WORK/sqlite.zst" "$WORK/upto$e.json" --epochs :$e
    done
    analyze "$WORK/sqlite.zst" "$WORK/in$b.json" --epochs $((b * per)):$((b * per))
    b=$((b + 1))
done

check "$WORK" $blocks $per "$LINES" <<'PY'
import os, re, sys
from churncheck import *
work, blocks, per, lines = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
report = load(os.path.join(work, "all.json"))
expect("epochs", len(field(report, "epochs")), blocks * per + 1)
stat = [l for l in open(os.path.join(work, "stats.txt")).read().split("\n") if re.match(lines, l)]
def figures(line):
    return [int(x) for x in re.findall(r"\d+", line.split(":", 1)[1])]
def sqlite_site(c):
    return c["stack"] and "libsqlite3.so" in c["stack"][0]
def live(e):
    w = load(os.path.join(work, "upto%d.json" % e))
    mine = [c for c in w["fragmentation_callsites"] if sqlite_site(c)]
    return (sum(c["live_count"] for c in mine), sum(c["live_bytes"] for c in mine),
            w["epochs"][-1]["live_count"], w["epochs"][-1]["live_bytes"])
round8 = lambda n: (n + 7) & ~7
prev_largest = None
for b in range(blocks):
    block = {l.split(":")[0]: figures(l) for l in stat[b * per:(b + 1) * per]}
    used, used_max = block["Memory Used"]
    count, count_max = block["Number of Outstanding Allocations"]
    largest = block["Largest Allocation"][0]
    n, requested, all_n, all_bytes = live(b * per)
    expect("block %d: Memory Used = live requested - 8 x live objects (epoch %d)" % (b, b * per),
           requested - 8 * n, used)
    n1 = live(b * per + 1)[0]
    expect("block %d: Outstanding Allocations = live objects (epoch %d)" % (b, b * per + 1), n1, count)
    # the statement that raised it allocated ROUND8(n) + 8 bytes once at one callsite (the
    # script is the same every run, and so are sqlite's allocations)
    w = load(os.path.join(work, "in%d.json" % b))
    if b == 0 or largest != prev_largest:
        sizes = {c["alloc_bytes"] for c in w["growth"] if sqlite_site(c) and c["allocs"] == 1}
        if round8(largest) + 8 not in sizes:
            fail("block %d: Largest Allocation %d: no allocation of %d B in libchurn's callsites"
                 % (b, largest, round8(largest) + 8))
    top = max(c["max_bytes"] for c in load(os.path.join(work, "upto%d.json" % (b * per)))["size_classes"] if c["allocs"])
    if round8(largest) + 8 > top:
        fail("block %d: Largest Allocation %d past libchurn's largest size class %d" % (b, largest, top))
    prev_largest = largest
    # statement b ran in epoch b*per (from display b-1's last call to display b's first).
    # At libchurn's peak in it the others (not sqlite's) held at most what they held at its
    # end plus what of theirs it freed, in at least their objects at its end less those it
    # allocated: sqlite's Memory Used then, a lower bound of its high-water mark, is at least
    inside = w
    pk = field(inside, "peak")
    expect("block %d: peak exact" % b, pk["exact"], True)
    others = [c for c in inside["growth"] if not sqlite_site(c)]
    freed = sum(c["free_bytes"] for c in others)
    allocated = sum(c["allocs"] for c in others)
    lo = pk["bytes"] - (all_bytes - requested + freed) - 8 * (pk["count"] - (all_n - n - allocated))
    if lo > used_max:
        fail("block %d: max Memory Used %d below what libchurn's peak holds of sqlite's, %d"
             % (b, used_max, lo))
    print("block %d: Memory Used %d, Outstanding %d, Largest %d exact; max %d >= %d at libchurn's peak"
          % (b, used, count, largest, used_max, lo))
PY
