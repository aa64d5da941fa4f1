#!/bin/sh
# `make soak-live`: a server left traced and scraped for long (docs/fleet.md, "What it
# costs").  Debian's redis-server under churn run in sampled mode (CHURN_SAMPLE_BYTES,
# default 524288 here; LIVE_SOAK_SAMPLE_BYTES changes it) with an epoch every 100 ms
# (LIVE_SOAK_EPOCH_MS), and a native redis-server beside it, loaded by redis-benchmark in rounds (SET and GET of 64-byte
# values over 100,000 keys, 8 clients, pipelines of 8), traced and native in turn, for
# LIVE_SOAK_SECONDS (default 600), while churn serve follows the trace and a scraper asks
# /metrics every second and /debug/pprof/heap every 10 s.  Printed (and kept in
# build/soak-live/): throughput traced against native in the same rounds, churn serve's RSS
# every 10 s and its CPU time, the scrapes' answers and latencies, and the trace's bytes per
# hour.  The follower's tables grow with the epochs until the analyzer's bounds (4,096 epoch
# rows, 8,192 span snapshots; docs/analyzer.md, "Epoch buckets") and then hold: an epoch every
# 100 ms passes the first within the 10 minutes, so the RSS figures show where it stops.  A
# bench, not a test: nothing here fails on a figure.
set -eu
cd "$(dirname "$0")/.."
OUT=build/soak-live
SECONDS_TRACED=${LIVE_SOAK_SECONDS:-600}
SAMPLE_BYTES=${LIVE_SOAK_SAMPLE_BYTES:-524288}
EPOCH_MS=${LIVE_SOAK_EPOCH_MS:-100}
RPORT=${LIVE_SOAK_PORT:-16479}
SPORT=$((RPORT + 1))
NPORT=$((RPORT + 2))
mkdir -p "$OUT"
rm -f "$OUT"/*

fail() {
    echo "soak-live: $*" >&2
    exit 1
}
command -v redis-server >/dev/null || fail "redis-server is missing (Debian redis-server)"
command -v redis-benchmark >/dev/null || fail "redis-benchmark is missing (Debian redis-tools)"

wait_redis() {
    i=0
    until redis-cli -p $1 ping >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -lt 300 ] || fail "redis-server did not start on port $1"
        sleep 0.1
    done
}

# round PORT NAME: one redis-benchmark round, its SET and GET requests per second appended to
# $OUT/NAME.rounds.
round() {
    redis-benchmark -p $1 -t set,get -n 200000 -c 8 -P 8 -d 64 -r 100000 -q --csv |
        awk -F'"' '$2 == "SET" || $2 == "GET" { printf "%s %s\n", $2, $4 }' >>"$OUT/$2.rounds"
}

redis-server --port $NPORT --bind 127.0.0.1 --save '' --appendonly no >"$OUT/native.out" 2>&1 &
native=$!
wait_redis $NPORT
CHURN_SAMPLE_BYTES=$SAMPLE_BYTES build/churn run -o "$OUT/redis.zst" --epoch-ms $EPOCH_MS -- \
    redis-server --port $RPORT --bind 127.0.0.1 --save '' --appendonly no >"$OUT/traced.out" 2>&1 &
run=$!
wait_redis $RPORT
build/churn serve --listen 127.0.0.1:$SPORT "$OUT/redis.zst" 2>"$OUT/serve.err" &
serve=$!
trap 'kill $native $run $serve $scraper 2>/dev/null || true' EXIT
started=$(date +%s)
python3 - "$SPORT" "$serve" "$SECONDS_TRACED" "$OUT" >"$OUT/scraper.out" 2>&1 <<'PY' &
import http.client, os, sys, time
port, pid, seconds, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
page = os.sysconf("SC_PAGE_SIZE")
def get(path):
    t = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, len(body), time.monotonic() - t
    except OSError as e:
        return str(e), 0, time.monotonic() - t
start = time.monotonic()
with open(os.path.join(out, "scrapes"), "w") as scrapes, open(os.path.join(out, "serve.rss"), "w") as rss:
    n = 0
    while time.monotonic() - start < seconds:
        n += 1
        status, size, took = get("/metrics")
        scrapes.write("%d metrics %s %d %.4f\n" % (n, status, size, took))
        if n % 10 == 0:
            status, size, took = get("/debug/pprof/heap")
            scrapes.write("%d heap %s %d %.4f\n" % (n, status, size, took))
            with open("/proc/%d/statm" % pid) as f:
                resident = int(f.read().split()[1]) * page
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            hz = os.sysconf("SC_CLK_TCK")
            cpu = (int(fields[11]) + int(fields[12])) / hz
            children = (int(fields[13]) + int(fields[14])) / hz  # the views' children
            rss.write("%d %d %.2f %.2f\n" % (n, resident, cpu, children))
            scrapes.flush()
            rss.flush()
        time.sleep(max(0, start + n - time.monotonic()))
PY
scraper=$!
end=$((started + SECONDS_TRACED))
while [ "$(date +%s)" -lt $end ]; do
    round $RPORT traced
    round $NPORT native
done
wait $scraper || fail "the scraper failed: $(tail -n 1 "$OUT/scraper.out")"
elapsed=$(($(date +%s) - started))
trace_bytes=$(stat -c %s "$OUT/redis.zst")
redis-cli -p $RPORT shutdown nosave >/dev/null 2>&1 || true
wait $run || true
kill $serve
wait $serve || true
redis-cli -p $NPORT shutdown nosave >/dev/null 2>&1 || true
wait $native || true
build/churn-analyze --json "$OUT/redis.zst" >"$OUT/redis.json" 2>"$OUT/analyze.err" ||
    fail "churn-analyze cannot read the soak's trace: $(tail -n 1 "$OUT/analyze.err")"

python3 - "$OUT" "$elapsed" "$trace_bytes" "$SAMPLE_BYTES" "$EPOCH_MS" <<'PY'
import json, os, statistics, sys
out, elapsed, trace_bytes, sample, epoch_ms = sys.argv[1:6]
elapsed, trace_bytes = int(elapsed), int(trace_bytes)
def rps(name):
    rows = [l.split() for l in open(os.path.join(out, name + ".rounds"))]
    return {k: [float(v) for t, v in rows if t == k] for k in ("SET", "GET")}
native, traced = rps("native"), rps("traced")
print("redis-benchmark rounds, traced and native in turn (requests/s, median of rounds):")
for k in ("SET", "GET"):
    n, t = statistics.median(native[k]), statistics.median(traced[k])
    print("  %s native %.0f (%d rounds), traced %.0f (%d rounds): %.3f of native"
          % (k, n, len(native[k]), t, len(traced[k]), t / n))
rss = [l.split() for l in open(os.path.join(out, "serve.rss"))]
mib = lambda b: int(b) / 1048576
print("churn serve RSS (every 10 s, one epoch every %s ms):" % epoch_ms)
print("  " + ", ".join("%d s %.1f MiB" % (int(r[0]), mib(r[1])) for r in rss[::6] + [rss[-1]]))
print("  most %.1f MiB" % max(mib(r[1]) for r in rss))
cpu, children = float(rss[-1][2]), float(rss[-1][3])
print("churn serve CPU: %.1f s in %d s (%.1f %%), and %.1f s in the children that made its views"
      % (cpu, elapsed, 100 * cpu / elapsed, children))
scrapes = [l.split() for l in open(os.path.join(out, "scrapes"))]
for kind in ("metrics", "heap"):
    rows = [s for s in scrapes if s[1] == kind]
    ok = [s for s in rows if s[2] == "200"]
    took = sorted(float(s[4]) for s in ok)
    print("%s: %d asked, %d answered 200; latency median %.1f ms, 99th %.1f ms, most %.1f ms"
          % (kind, len(rows), len(ok), 1000 * took[len(took) // 2],
             1000 * took[int(len(took) * 0.99)], 1000 * took[-1]))
meta = json.load(open(os.path.join(out, "redis.json")))["metadata"]
wrapped = meta["first_seq"] > 0
print("trace: %d bytes in %d s (%s), %.1f MiB per hour, CHURN_SAMPLE_BYTES=%s, %d epochs"
      % (trace_bytes, elapsed, "the ring went round" if wrapped else "the ring never went round",
         trace_bytes / elapsed * 3600 / 1048576, sample, meta["last_epoch"] + 1))
PY
