#!/bin/sh
# PostgreSQL (Debian 12's postgresql-15 15.18-0+deb12u1, checked against that version): a
# cluster made by initdb in a temporary directory, pgbench's tables (scale 2, 200,000
# accounts), then the server under `churn run --epoch-ms 200`: pgbench with 4 connections
# (a backend forked per connection) and a psql session that reads the whole accounts table
# through the shared buffers, stopped by SIGINT (pg_ctl's fast shutdown).
#  - behaviour: pgbench completes every transaction with none failed, the table's count is
#    the same, and the server exits 0, as natively;
#  - every image (postmaster, its auxiliary processes, the backends) is named by its own
#    title ("postgres: checkpointer", "postgres: postgres postgres [local] idle") and ends
#    as postgres's log says (exit 0; exit 1 for the logical replication launcher and a
#    backend that said FATAL), with no dropped event;
#  - the shared memory is outside malloc, checked against /proc: the postmaster's mapping of
#    it (/dev/zero (deleted) in /proc/PID/maps) is in its program_mapped_bytes, and in the
#    psql backend, whose RssShmem (/proc/PID/status, read while it sleeps) holds the table's
#    pages, the memory outside the heap is at least RssShmem, the heap (live, slack, pinned)
#    stays under 8 MiB, and "not traced" under 1 MiB: the shared buffers are neither heap nor
#    memory no traced allocator explains;
#  - the heap against glibc's own books: mallinfo2() called by gdb in that backend while it
#    sleeps gives the bytes of chunks in use (uordblks + hblkhd); libchurn's live bytes in the
#    epoch of the reading (the postmaster's objects the backend inherited included) plus 16
#    bytes of chunk header and rounding each is within 64 KiB of it (chunks in the tcache
#    count as in use in mallinfo2's books).
. test/lib.sh

VERSION=15.18-0+deb12u1
BIN=/usr/lib/postgresql/15/bin
got=$(dpkg-query -W -f '${Version}' postgresql-15 2>/dev/null) || fail "postgresql-15 is not installed (make check installs it)"
[ "$got" = "$VERSION" ] || fail "postgresql-15 $got: this test was checked against $VERSION"
command -v gdb >/dev/null || fail "gdb is missing"

# postgres refuses to run as root: as root, the cluster and the traces belong to postgres
dir=$(mktemp -d /tmp/churn-pg.XXXXXX)
trap 'rm -rf "$dir"' EXIT
as=""
if [ "$(id -u)" = 0 ]; then
    chown postgres "$dir"
    as="runuser -u postgres --"
fi
data=$dir/data
# one backend reads the whole table (no parallel workers share the scan)
psql() { $as env PGOPTIONS='-c max_parallel_workers_per_gather=0' "$BIN/psql" -X -At -h "$dir" -p $port -U postgres "$@" postgres; }
$as "$BIN/initdb" -D "$data" -A trust -U postgres >"$WORK/initdb.out" 2>&1 || fail "initdb failed: $(tail -n 1 "$WORK/initdb.out")"
$as "$BIN/pg_ctl" -D "$data" -o "-p $port -k $dir -c listen_addresses=''" -w start >"$WORK/pgctl.out" 2>&1 ||
    fail "pg_ctl start failed: $(tail -n 1 "$WORK/pgctl.out")"
$as "$BIN/pgbench" -h "$dir" -p $port -U postgres -i -s 2 postgres >"$WORK/init.out" 2>&1 ||
    { $as "$BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1; fail "pgbench -i failed: $(tail -n 1 "$WORK/init.out")"; }
$as "$BIN/pg_ctl" -D "$data" -m fast -w stop >>"$WORK/pgctl.out" 2>&1 || fail "pg_ctl stop failed"
shm=$($as "$BIN/postgres" -D "$data" -C shared_memory_size) || fail "postgres -C shared_memory_size failed"

# serve NAME PREFIX...: the server under PREFIX, the workload, SIGINT; NAME.* the results
serve() {
    name=$1
    shift
    $as "$@" "$BIN/postgres" -D "$data" -p $port -k "$dir" -c listen_addresses='' \
        >"$WORK/$name.out" 2>"$WORK/$name.err" &
    pid=$!
    n=0
    until $as "$BIN/pg_isready" -h "$dir" -p $port >/dev/null 2>&1; do
        n=$((n + 1))
        [ $n -lt 300 ] || { kill $pid; fail "$name: postgres did not start: $(tail -n 1 "$WORK/$name.err")"; }
        sleep 0.1
    done
    postmaster=$(head -n 1 "$data/postmaster.pid")
    grep -F '/dev/zero (deleted)' /proc/$postmaster/maps >"$WORK/$name.shm-maps" || true
    $as "$BIN/pgbench" -h "$dir" -p $port -U postgres -c 4 -t 200 -n postgres >"$WORK/$name.bench" 2>&1 ||
        { kill -INT $postmaster; fail "$name: pgbench failed: $(tail -n 1 "$WORK/$name.bench")"; }
    psql -c "select pg_backend_pid()" -c "select count(*) from pgbench_accounts" \
        -c "select pg_sleep(3)" >"$WORK/$name.psql" 2>&1 &
    session=$!
    backend=
    n=0
    while [ -z "$backend" ] && [ $n -lt 100 ]; do
        backend=$(psql -c "select pid from pg_stat_activity where query = 'select pg_sleep(3)' and state = 'active'" 2>/dev/null)
        n=$((n + 1))
        [ -n "$backend" ] || sleep 0.1
    done
    [ -n "$backend" ] || { kill -INT $postmaster; fail "$name: the psql session's backend never slept"; }
    sleep 0.5 # an epoch ends after the scan
    grep -E '^(VmRSS|RssAnon|RssFile|RssShmem):' /proc/$backend/status >"$WORK/$name.smaps" 2>/dev/null
    timeout 30 gdb -p $backend -batch -ex 'p mallinfo2()' >"$WORK/$name.gdb" 2>&1 || true
    wait $session || { kill -INT $postmaster; fail "$name: psql failed: $(tail -n 1 "$WORK/$name.psql")"; }
    echo "$backend" >"$WORK/$name.backend"
    kill -INT $postmaster
    status=0
    wait $pid || status=$?
    echo $status >"$WORK/$name.status"
}

serve native
for run in native churn; do
    [ $run = native ] || { rm -f "$WORK"/t.*; serve churn "$ROOT/build/churn" run --epoch-ms 200 -o "$dir/t.zst"; }
    [ "$(cat "$WORK/$run.status")" = 0 ] || fail "$run: postgres exited with status $(cat "$WORK/$run.status"): $(tail -n 1 "$WORK/$run.err")"
    grep -q "number of transactions actually processed: 800/800" "$WORK/$run.bench" || fail "$run: pgbench: $(grep processed "$WORK/$run.bench")"
    grep -q "number of failed transactions: 0 " "$WORK/$run.bench" || fail "$run: pgbench had failed transactions"
    sed -n 2p "$WORK/$run.psql" | grep -qx 200000 || fail "$run: the accounts table counts $(sed -n 2p "$WORK/$run.psql")"
done
[ -s "$WORK/churn.shm-maps" ] || fail "the postmaster maps no /dev/zero (deleted) region"
grep -q 'uordblks' "$WORK/churn.gdb" || fail "gdb could not call mallinfo2 in the backend: $(tail -n 1 "$WORK/churn.gdb")"
cp "$dir"/t.index "$WORK/t.index"
"$ANALYZE" --tree --json "$dir/t.index" >"$WORK/tree.json" 2>"$WORK/tree.err" ||
    fail "churn-analyze --tree failed: $(tail -n 1 "$WORK/tree.err")"

check "$WORK/tree.json" "$WORK/churn.shm-maps" "$WORK/churn.smaps" "$WORK/churn.gdb" \
    "$(cat "$WORK/churn.backend")" "$shm" "$WORK/churn.err" <<'PY'
import re, sys
from churncheck import *
tree = load(sys.argv[1])
procs = {p["pid"]: p for p in tree["processes"]}
# postgres's log names the processes that end otherwise: the logical replication launcher
# exits 1 at every shutdown, a backend that says FATAL (pg_isready's probe while the server
# starts up) exits 1
log = open(sys.argv[7]).read()
codes = {int(m[1]): 1 for m in re.finditer(r"\[(\d+)\] FATAL:", log)}
codes.update({int(m[1]): int(m[2]) for m in re.finditer(r"\(PID (\d+)\) exited with exit code (\d+)", log)})
for p in procs.values():
    expect("pid %d's end" % p["pid"], p["end"], "exit %d" % codes.get(p["pid"], 0))
    if p["report"] is None:
        fail("pid %d's trace could not be read" % p["pid"])
    expect("pid %d's dropped events" % p["pid"], p["report"]["totals"]["dropped_events"], 0)
if len(procs) < 8:
    fail("only %d images traced (postmaster, auxiliaries, 5 backends at least)" % len(procs))
# each child is named by the title it gave itself after the fork, not the postmaster's argv
titles = sorted(p["command"] for p in procs.values())
for want in ("postgres: checkpointer", "postgres: background writer", "postgres: walwriter"):
    if want not in titles:
        fail("no image named %r: %s" % (want, titles))
if sum(t.startswith("postgres: postgres postgres [local]") for t in titles) < 5:
    fail("fewer than 5 backends named by their title: %s" % titles)

# the shared memory: one /dev/zero mapping in the postmaster, of postgres's own size
lo, hi = (int(x, 16) for x in open(sys.argv[2]).read().split()[0].split("-"))
shm_map = hi - lo
shm_mb = int(sys.argv[6])
if not (shm_mb - 1) * 2**20 < shm_map <= shm_mb * 2**20:
    fail("the /dev/zero mapping is %d bytes, postgres says shared_memory_size = %d MB" % (shm_map, shm_mb))
master = [p for p in procs.values() if p["parent"] not in procs][0]
mapped = max(r["program_mapped_bytes"] or 0 for r in master["report"]["fragmentation"])
if not shm_map <= mapped < shm_map + 2**20:
    fail("the postmaster's program_mapped_bytes peak at %d, its shared memory maps %d" % (mapped, shm_map))

# the psql session's backend, read while it slept after its scan
smaps = {k: int(v.split()[0]) * 1024 for k, v in (l.split(":", 1) for l in open(sys.argv[3]))}
backend = procs[int(sys.argv[5])]["report"]
rows = {r["epoch"]: r for r in backend["fragmentation"]}
# the epoch of the readings: the largest RSS, after the scan, during the sleep that holds the
# heap still; not the exit's teardown, nor the first, which the child began in its parent
cands = [rows[e] for e in rows if e not in (min(rows), max(rows))]
row = max(cands, key=lambda r: r["rss_bytes"] or 0)
if smaps["RssShmem"] < 16 * 2**20:
    fail("the backend's RssShmem is only %d bytes: the scan did not go through the shared buffers" % smaps["RssShmem"])
outside = row["outside_heap_bytes"]
if outside is None or outside < smaps["RssShmem"]:
    fail("epoch %d: outside the heap %s bytes, less than the backend's RssShmem %d" % (row["epoch"], outside, smaps["RssShmem"]))
heap = row["live_bytes"] + row["slack_bytes"] + row["pinned_bytes"]
if heap > 8 * 2**20:
    fail("epoch %d: the heap counts %d bytes: the shared buffers taken for heap" % (row["epoch"], heap))
for r in backend["fragmentation"]:
    if (r["untraced_bytes"] or 0) > 2**20:
        fail("epoch %d: %d bytes 'not traced' in the backend" % (r["epoch"], r["untraced_bytes"]))
if abs(row["rss_bytes"] - smaps["VmRSS"]) > 2 * 2**20:
    fail("epoch %d: RSS %d, /proc VmRSS %d" % (row["epoch"], row["rss_bytes"], smaps["VmRSS"]))

m = re.search(r"hblkhd = (\d+).*uordblks = (\d+)", open(sys.argv[4]).read())
books = int(m[1]) + int(m[2])
ep = [e for e in backend["epochs"] if e["epoch"] == row["epoch"]][0]
ours = ep["live_bytes"] + 16 * ep["live_count"]
if abs(books - ours) > 65536:
    fail("epoch %d: mallinfo2 in use %d, libchurn's live bytes and headers %d" % (row["epoch"], books, ours))
print("shared memory %d (postgres %d MB) mapped %d; backend rss %d smaps %d, RssShmem %d, outside %d, heap %d; mallinfo2 %d, libchurn %d" % (
    shm_map, shm_mb, mapped, row["rss_bytes"], smaps["VmRSS"], smaps["RssShmem"], outside, heap, books, ours))
PY
echo "ok: postgres $VERSION under churn run: pgbench 800/800, every image exit 0; shared memory outside malloc"
