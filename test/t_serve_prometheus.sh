#!/bin/sh
# churn serve's /metrics scraped by Debian's Prometheus: the demo workload
# (test/programs/request_loop.c, one epoch per request, a 48-byte session leaked by
# remember_session each) under churn run, churn serve following its trace, and prometheus on
# the loopback address scraping it every second.  Prometheus's own HTTP API (/api/v1/query)
# must show churn_live_bytes rising over 10 s, the top function by live bytes
# (topk(1, churn_function_live_bytes)) must be remember_session once its leak outweighs the
# parked responses, growing by exactly 48 bytes per epoch, and `promtool check metrics` must
# accept the exposition.
. test/lib.sh
command -v prometheus >/dev/null || fail "prometheus is missing (Debian prometheus; make check installs it)"
command -v promtool >/dev/null || fail "promtool is missing (Debian prometheus)"

build_c request_loop test/programs/request_loop.c
"$ROOT/build/churn" run -o "$WORK/t.zst" -- "$WORK/request_loop" 100000 5 \
    >/dev/null 2>"$WORK/run.err" &
run=$!
trap 'kill ${run:-} ${SERVE_PID:-} ${prom:-} 2>/dev/null || true' EXIT
serve_live "$WORK/t.zst"

cat >"$WORK/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: churn
    static_configs:
      - targets: ['127.0.0.1:$port']
EOF
promtool check config "$WORK/prometheus.yml" >"$WORK/config.out" 2>&1 ||
    fail "promtool rejects the scrape config: $(tail -n 1 "$WORK/config.out")"
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address=127.0.0.1:$((port + 1)) >"$WORK/prometheus.out" 2>&1 &
prom=$!

python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=60).read().decode(), end='')" \
    >"$WORK/metrics.txt" || fail "cannot read /metrics"
promtool check metrics <"$WORK/metrics.txt" >"$WORK/promtool.out" 2>&1 ||
    fail "promtool check metrics rejects /metrics: $(head -n 3 "$WORK/promtool.out")"

check $((port + 1)) <<'PY'
import json, sys, time, urllib.parse
from churncheck import *
from livecheck import *
api = int(sys.argv[1])

def query(q):
    status, _, body = get(api, "/api/v1/query?query=" + urllib.parse.quote(q))
    if status != 200:
        return []
    return json.loads(body)["data"]["result"]

wait("prometheus to scrape churn serve", lambda: query('up{job="churn"} == 1'), 120)
first = wait("a first churn_live_bytes", lambda: query("churn_live_bytes"), 60)
start = float(first[0]["value"][1])
time.sleep(10)
now = float(query("churn_live_bytes")[0]["value"][1])
if not now > start:
    fail("churn_live_bytes did not rise in 10 s: %d then %d" % (start, now))
series = wait("the leak to lead the functions' live bytes",
              lambda: [r for r in query("topk(1, churn_function_live_bytes)")
                       if r["metric"].get("function") == "remember_session"], 120)
m = series[0]["metric"]
expect("its module", m.get("module"), "request_loop")
growth = query('churn_function_growth_bytes_per_epoch{function="remember_session"}')
expect("its growth per epoch", float(growth[0]["value"][1]), 48.0)
rss = query('churn_rss_part_bytes{part="live"}')
if not rss or float(rss[0]["value"][1]) <= 0:
    fail("no live part of RSS: %s" % rss)
print("prometheus: churn_live_bytes %d -> %d in 10 s, top function %s (%s B live), +48 B/epoch"
      % (start, now, m["function"], series[0]["value"][1]))
PY
