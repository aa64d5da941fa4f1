#!/bin/sh
# Allocator books that contradict the live set are not subtracted as if fresh: on a trace of
# the independent encoder (test/tools/mktrace.py), epoch 1's glibc counters count fewer bytes
# in use than its live objects hold (read after the program freed them), and its row must say
# so (books_stale, no free-resident figure, a warning naming the epoch) with every part of RSS
# >= 0 and the parts adding up; epoch 0's fresh books are used.  Then real programs (python3,
# sqlite3, python3 with tcmalloc and with jemalloc preloaded, redis-server): in every epoch
# every part of RSS is >= 0 and the parts add up, stale books flagged and named, and no event
# dropped.
. test/lib.sh

python3 - "$WORK" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
W = sys.argv[1]
gl = ("glibc", 4096, ["mallinfo2.arena", "mallinfo2.hblkhd", "mallinfo2.uordblks",
                      "mallinfo2.fordblks", "mallinfo2.keepcost"])
# 100 objects of 4080 usable bytes, one page each (glibc: 16 bytes of header before them)
allocs = [["alloc", 0, 0x100010 + 4096 * i, 4080, 0, 1] for i in range(100)]
recs = mktrace.prelude(0, 0, allocator=gl) + [["stack", 1, [0x10]], ["thread", 1], ["epoch", 0]]
recs += allocs + [
    # fresh: 100 chunks of 4096 in use, 8192 free
    ["epoch_end", {"epoch": 0, "rss": 2000000, "counters": [417792, 0, 409600, 8192, 0]}],
    ["epoch", 1], ["alloc", 0, 0x200010, 4080, 0, 1],
    # stale: read once the program had freed most of its heap (arena kept, chunks free)
    ["epoch_end", {"epoch": 1, "rss": 2000000, "counters": [421888, 0, 4096, 417792, 0]}],
    ["exit", 1, 0]]
open(os.path.join(W, "stale"), "wb").write(mktrace.build(
    {"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": 1, "records": recs}]}))
PY
analyze "$WORK/stale" "$WORK/stale.json"
"$ANALYZE" "$WORK/stale" >"$WORK/stale.txt" 2>&1 || fail "churn-analyze failed on the stale trace"

check "$WORK/stale.json" "$WORK/stale.txt" <<'PY'
import sys
from churncheck import *
report, text = load(sys.argv[1]), open(sys.argv[2]).read()
rows = {r["epoch"]: r for r in field(report, "fragmentation")}
parts = ("live_bytes", "slack_bytes", "pinned_bytes", "free_resident_bytes", "outside_heap_bytes",
         "libchurn_bytes", "residual_bytes")
def check_row(r, what):
    values = [r[p] or 0 for p in parts]
    expect(what + ": parts add up to rss", sum(values), r["rss_bytes"])
    neg = [p for p in parts if (r[p] or 0) < 0]
    if neg:
        fail("%s: negative parts %s in %s" % (what, neg, r))
fresh, stale = rows[0], rows[1]
check_row(stale, "epoch 1")
expect("epoch 0 books_stale", fresh.get("books_stale"), False)
# the pages' 16 bytes before each object are pinned: fordblks - 1600
expect("epoch 0 free resident", fresh["free_resident_bytes"], 8192 - 1600)
check_row(fresh, "epoch 0")
expect("epoch 1 books_stale", stale.get("books_stale"), True)
expect("epoch 1 free resident", stale["free_resident_bytes"], None)
warn = [w for w in field(report, "warnings") if "allocator counters stale at 1 epoch(s) (first: epoch 1," in w]
if len(warn) != 1:
    fail("no warning naming the stale epoch: %s" % field(report, "warnings"))
if "books stale" not in text:
    fail("the text report does not mark the stale row:\n" + text)
print("stale books: epoch 1 flagged, parts add up, none negative")
PY

# Real programs, epochs every 20 ms.
cat >"$WORK/churn.py" <<'PY'
import time
keep = []
for r in range(30):
    keep.append([str(i) * 10 for i in range(20000)])
    if len(keep) > 5:
        keep.pop(0)
    d = {i: bytearray(300) for i in range(5000)}
    time.sleep(0.01)
big = [bytearray(1 << 20) for _ in range(50)]
del big
PY
[ -f "$TCMALLOC" ] || fail "$TCMALLOC missing: apt-get install libgoogle-perftools-dev"
[ -f "$JEMALLOC" ] || fail "$JEMALLOC missing: apt-get install libjemalloc-dev"
command -v sqlite3 >/dev/null || fail "sqlite3 is missing (Debian sqlite3)"
command -v redis-server >/dev/null || fail "redis-server is missing (Debian redis-server)"
export CHURN_EPOCH_MS=20
PY3=/usr/bin/python3
CHURN_PRELOAD_EXTRA= traced "$WORK/python.zst" "$WORK/python.out" $PY3 "$WORK/churn.py"
CHURN_PRELOAD_EXTRA=$TCMALLOC traced "$WORK/python_tc.zst" "$WORK/python_tc.out" $PY3 "$WORK/churn.py"
CHURN_PRELOAD_EXTRA=$JEMALLOC traced "$WORK/python_je.zst" "$WORK/python_je.out" $PY3 "$WORK/churn.py"
{ echo ".parameter set @rows 100000"; cat bench/sqlite_churn.sql; } >"$WORK/churn.sql"
CHURN_PRELOAD_EXTRA= traced "$WORK/sqlite.zst" "$WORK/sqlite.out" sqlite3 -init "$WORK/churn.sql" :memory: </dev/null
# redis: a few thousand keys set and deleted through its own benchmark client, then shutdown;
# epochs every 50 ms, so that the writer reads jemalloc's books while the program runs
rm -f "$WORK/redis.zst"
env CHURN_OUT="$WORK/redis.zst" CHURN_EPOCH_MS=50 LD_PRELOAD="$SHIM" timeout 60 redis-server --port $port \
    --save '' --appendonly no --dir "$WORK" >"$WORK/redis.out" 2>&1 &
rpid=$!
i=0
until redis-cli -p $port ping >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 100 ] || { kill $rpid; fail "redis-server did not start: $(tail -n 1 "$WORK/redis.out")"; }
    sleep 0.1
done
redis-benchmark -p $port -q -n 20000 -r 5000 -d 512 -t set,get,lpush,lpop >"$WORK/redis-bench.out" 2>&1 ||
    { kill $rpid; fail "redis-benchmark failed: $(tail -n 1 "$WORK/redis-bench.out")"; }
redis-cli -p $port flushall >/dev/null
redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true
wait $rpid || true
[ -s "$WORK/redis.zst" ] || fail "redis-server wrote no trace"
# redis again under churn run, an epoch per signal, values of 1,000 bytes from one client:
# jemalloc maps memory of its own on a thread before that thread's first traced call.
port=$((port + 1))
"$ROOT/build/churn" run -o "$WORK/redis_sig.zst" --epoch-signal USR2 -- timeout 60 \
    redis-server --port $port --save '' --appendonly no --dir "$WORK" >"$WORK/redis_sig.out" 2>&1 &
cpid=$!
i=0
until redis-cli -p $port ping >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 100 ] || { kill $cpid; fail "redis-server did not start under churn run"; }
    sleep 0.1
done
for e in 1 2 3; do
    kill -USR2 $cpid
    sleep 0.2
    redis-benchmark -p $port -q -t set -n 2000 -r 100000000 -d 1000 -c 1 >>"$WORK/redis-bench.out" 2>&1 ||
        { kill $cpid; fail "redis-benchmark failed under churn run"; }
done
redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true
wait $cpid || fail "churn run redis-server exited with status $?"

for p in python python_tc python_je sqlite redis redis_sig; do
    analyze "$WORK/$p.zst" "$WORK/$p.json"
    check "$WORK/$p.json" "$p" <<'PY'
import sys
from churncheck import *
report, what = load(sys.argv[1]), sys.argv[2]
rows = field(report, "fragmentation")
if not rows:
    fail(what + ": no fragmentation rows")
stale = [r["epoch"] for r in rows if r.get("books_stale")]
neg = [(r["epoch"], p, r[p]) for r in rows for p in ("live_bytes", "slack_bytes", "pinned_bytes",
       "free_resident_bytes", "outside_heap_bytes", "residual_bytes") if r[p] is not None and r[p] < 0]
if neg:
    fail("%s: negative parts at (epoch, part, bytes) %s" % (what, neg[:5]))
rss_stale = [r["epoch"] for r in rows if r.get("rss_stale")]
if rss_stale and not any(w.startswith("RSS reading older than the epoch's end at %d epoch(s)" % len(rss_stale))
                         for w in field(report, "warnings")):
    fail("%s: %d rows with a stale RSS and no warning naming them" % (what, len(rss_stale)))
for r in rows:
    if r.get("rss_stale"):
        expect("%s epoch %d: outside the heap with a stale RSS" % (what, r["epoch"]), r["outside_heap_bytes"], None)
        continue
    if r["rss_bytes"] is not None and r["residual_bytes"] is not None:
        values = [r[p] or 0 for p in ("live_bytes", "slack_bytes", "pinned_bytes",
                  "free_resident_bytes", "outside_heap_bytes", "libchurn_bytes", "residual_bytes")]
        expect("%s epoch %d: parts add up to rss" % (what, r["epoch"]), sum(values), r["rss_bytes"])
# An allocator's own mmaps before a thread's first traced call (jemalloc's, as redis starts)
# have a ring to go to: none is dropped.
expect(what + ": dropped events", field(report, "totals", "dropped_events"), 0)
named = [w for w in field(report, "warnings") if w.startswith("allocator counters stale at %d epoch(s)" % len(stale))]
if stale and not named:
    fail("%s: %d stale rows and no warning naming them" % (what, len(stale)))
print("%s (%s): %d epochs, %d with stale books, %d with a stale RSS, no negative part" %
      (what, field(report, "metadata", "allocator"), len(rows), len(stale), len(rss_stale)))
PY
done
