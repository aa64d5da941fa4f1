#!/bin/sh
# The follower through a ring that wraps: Debian's redis-server, left running under churn run
# with a 4 MiB ring of 32 KiB segments and an epoch every 200 ms, gets SETs and DELs until its
# trace went round the ring several times, while two churn serve follow it: A all along, B
# stopped (SIGSTOP) until the ring overwrote what it was to read next, then let go on.  After
# redis's normal shutdown, each one's last /metrics must hold the figures of a full offline
# analysis (churn-analyze --json) of the file the ring kept: live bytes and objects, every top
# function's live bytes, RSS and the parts of it that do not depend on objects' addresses
# (free-resident, outside, not traced, libchurn's own) at the epoch /metrics names.  A read
# every segment (none lost, and its allocations less its frees since redis started are the
# live objects: nothing was lost on the way); B says how many it lost and that its state
# started over from a later segment's carry.
. test/lib.sh
command -v redis-server >/dev/null || fail "redis-server is missing (Debian redis-server)"
rport=$((port + 2))

cat >"$WORK/load.py" <<'PY'
import os, socket, sys, time
# load.py PORT STOPFILE: rounds of 5,000 SETs of three key sets in turn and DELs of half of
# the next set, until STOPFILE exists (at most 2,000 rounds).
port, stop = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=60)
def cmd(*args):
    return "*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args)
for r in range(2000):
    if os.path.exists(stop):
        break
    batch = "".join(cmd("SET", "key:%d:%d" % (r % 3, i), "v" * (50 + i % 200)) for i in range(5000))
    batch += "".join(cmd("DEL", "key:%d:%d" % ((r + 1) % 3, i)) for i in range(0, 5000, 2))
    s.sendall(batch.encode())
    buf = b""
    while buf.count(b"\r\n") < 7500:
        more = s.recv(1 << 20)
        if not more:
            sys.exit("redis closed the connection")
        buf += more
    time.sleep(0.05)
PY

CHURN_RING_MB=4 CHURN_SEGMENT_KB=32 timeout 300 "$ROOT/build/churn" run -o "$WORK/redis.zst" \
    --epoch-ms 200 -- redis-server --port $rport --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$WORK" >"$WORK/redis.out" 2>&1 &
run=$!
trap 'kill ${run:-} ${SERVE_PID:-} ${servb:-} ${load:-} 2>/dev/null || true' EXIT
i=0
until redis-cli -p $rport ping >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 300 ] || fail "redis-server did not start under churn run: $(tail -n 1 "$WORK/redis.out")"
    sleep 0.1
done
serve_live "$WORK/redis.zst"
"$ROOT/build/churn" serve --listen 127.0.0.1:$((port + 1)) "$WORK/redis.zst" 2>"$WORK/serveb.err" &
servb=$!
python3 "$WORK/load.py" $rport "$WORK/stop" >"$WORK/load.out" 2>&1 &
load=$!

# Both read, and scrape, while the load runs; then B stops until the ring has overwritten the
# segment after the newest one the file held when it stopped, and goes on.
check $port $((port + 1)) <<'PY'
import sys
from livecheck import *
for p in sys.argv[1:]:
    wait("/metrics of %s to show the trace" % p,
         lambda: value(metrics(int(p)), "churn_live_bytes"), 60)
PY
seq_of() {
    "$ANALYZE" --json "$WORK/redis.zst" 2>/dev/null |
        python3 -c "import json, sys; print(json.load(sys.stdin)['metadata']['$1'])"
}
kill -STOP $servb
newest=$(seq_of last_seq)
i=0
until [ "$(seq_of first_seq)" -gt $((newest + 1)) ]; do
    i=$((i + 1))
    [ $i -lt 1200 ] || fail "the ring did not go round past segment $((newest + 1)) in 120 s"
    kill -0 $load 2>/dev/null || fail "the load ended early: $(tail -n 1 "$WORK/load.out")"
    sleep 0.1
done
kill -CONT $servb
# and once more round the ring with both reading
newest=$(seq_of last_seq)
i=0
until [ "$(seq_of first_seq)" -gt "$newest" ]; do
    i=$((i + 1))
    [ $i -lt 1200 ] || fail "the ring did not go round again in 120 s"
    sleep 0.1
done
touch "$WORK/stop"
wait $load || fail "the load failed: $(tail -n 1 "$WORK/load.out")"
redis-cli -p $rport shutdown nosave >/dev/null 2>&1 || true
wait $run || fail "redis-server under churn run exited with status $?: $(tail -n 1 "$WORK/redis.out")"
analyze "$WORK/redis.zst" "$WORK/offline.json"

check "$WORK/offline.json" $port $((port + 1)) <<'PY'
import sys
from churncheck import *
from livecheck import *
report = load(sys.argv[1])
last = field(report, "epochs")[-1]
rows = {r["epoch"]: r for r in field(report, "fragmentation")}
functions = {(f["function"], f["module"]): f for f in field(report, "functions")}
if not field(report, "metadata", "first_seq"):
    fail("the ring kept every segment: it never went round")
for name, p in ("A", int(sys.argv[2])), ("B", int(sys.argv[3])):
    seen = lambda: "%s says %s, lost %s segments, started over %s times" % (
        name, states(p), value(metrics(p), "churn_segments_lost_total"),
        value(metrics(p), "churn_follow_restarts_total"))
    m = wait("%s to see redis end" % name,
             lambda: (lambda s: s if value(s, "churn_process_running") == 0 else None)(metrics(p)),
             60, then=seen)
    got = lambda n, **l: value(m, n, **l)
    expect(name + " live bytes", got("churn_live_bytes"), last["live_bytes"])
    expect(name + " live objects", got("churn_live_objects"), last["live_count"])
    fns = [(l["function"], l["module"], v) for n, l, v in m if n == "churn_function_live_bytes"]
    if len(fns) < 10:
        fail("%s shows %d functions" % (name, len(fns)))
    for fn, module, v in fns:
        # The offline report lists a function with an event or a live object in the segments
        # the ring kept; A, which read from the start, also those whose objects all went before.
        off = functions.get((fn, module))
        if not off and v:
            fail("%s's function %s (%s), %d live bytes, is not in the offline report"
                 % (name, fn, module, v))
        expect("%s live bytes of %s" % (name, fn), v, off["live_bytes"] if off else 0)
    row = rows.get(int(got("churn_rss_epoch")))
    if not row:
        fail("%s's RSS is of epoch %d, which the offline report has no row of"
             % (name, got("churn_rss_epoch")))
    expect(name + " rss", got("churn_rss_bytes"), row["rss_bytes"])
    part = lambda p: got("churn_rss_part_bytes", part=p)
    if row["free_resident_bytes"] is not None:
        expect(name + " free-resident", part("free_resident"), row["free_resident_bytes"])
    if not row["outside_with_free"]:
        expect(name + " outside", part("outside"), row["outside_heap_bytes"])
    expect(name + " not traced", part("not_traced"), row["untraced_bytes"])
    expect(name + " libchurn", part("libchurn"), row["libchurn_bytes"])
    lost, restarts = got("churn_segments_lost_total"), got("churn_follow_restarts_total")
    allocs, frees = got("churn_allocations_total"), got("churn_frees_total")
    if name == "A":
        expect("A's segments lost", lost, 0)
        expect("A's restarts", restarts, 0)
        expect("A's allocations less frees", allocs - frees, last["live_count"])
        print("A: %d segments read, %d allocations since redis started, live %d B in %d objects"
              % (field(report, "metadata", "last_seq") + 1, allocs, last["live_bytes"],
                 last["live_count"]))
    else:
        if not lost or not restarts:
            fail("B lost %d segments and started over %d times" % (lost, restarts))
        print("B: %d segments lost, %d restart(s), the same live figures" % (lost, restarts))
PY
