#!/bin/sh
# The epochs table at scale (docs/analyzer.md, "Epoch buckets"): the analyzer's memory does
# not grow with the number of epochs, the default JSON holds at most CHURN_EPOCH_ROWS (4096)
# rows, --all-epochs gives every epoch, a bucket's sums, extremes and end values are those of
# its epochs, and every fit (per-callsite growth, the window's trends) is the same whether the
# rows are merged or not.  The demo workload (request_loop, one 48-byte leak per request).
# The runs compared with --all-epochs (every epoch, in the fits too) name the whole run with
# --epochs : rather than fit over the steady window their default finds.
. test/lib.sh

build_c request_loop test/programs/request_loop.c
for n in 50000 200000; do
    CHURN_EVENTS=0 traced "$WORK/sum$n.zst" "$WORK/sum$n.out" "$WORK/request_loop" $n
done
traced "$WORK/events.zst" "$WORK/events.out" "$WORK/request_loop" 20000
# With events, the live-vs-fragmented snapshots too: a steady live set (no leak), and small
# segments so that both traces fill the analyzer's decompression buffers alike.
for n in 50000 200000; do
    CHURN_SEGMENT_KB=256 traced "$WORK/steady$n.zst" "$WORK/steady$n.out" "$WORK/request_loop" $n steady
done
# And the leaking demo, whose exit shares the last bucket of snapshots with the most pinned
# epoch: the pinning ranked there is still at that epoch.
traced "$WORK/leak199999.zst" "$WORK/leak199999.out" "$WORK/request_loop" 199999
for t in steady200000 leak199999; do
    analyze "$WORK/$t.zst" "$WORK/$t.json" --epochs :
    "$ANALYZE" --all-epochs --json "$WORK/$t.zst" >"$WORK/$t.all.json" ||
        fail "churn-analyze --all-epochs --json $t failed"
done
"$ANALYZE" "$WORK/steady200000.zst" >"$WORK/steady200000.txt" || fail "churn-analyze steady200000 failed"
for t in sum200000 events; do
    analyze "$WORK/$t.zst" "$WORK/$t.json" --epochs :
    "$ANALYZE" --all-epochs --json "$WORK/$t.zst" >"$WORK/$t.all.json" ||
        fail "churn-analyze --all-epochs --json $t failed"
    "$ANALYZE" "$WORK/$t.zst" >"$WORK/$t.txt" || fail "churn-analyze $t failed"
    "$ANALYZE" --html -o "$WORK/$t.html" "$WORK/$t.zst" || fail "churn-analyze --html $t failed"
done

check "$ANALYZE" "$WORK" <<'PY'
import json, os, resource, subprocess, sys
A, W = sys.argv[1], sys.argv[2]

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

def peak_kib(trace):
    # each run in its own child, so that ru_maxrss is that run's peak
    code = ("import resource, subprocess, sys\n"
            "p = subprocess.run([sys.argv[1], '--json', sys.argv[2]], stdout=subprocess.DEVNULL)\n"
            "assert p.returncode == 0\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    return int(subprocess.check_output([sys.executable, "-c", code, A, trace]))

# The trace is mapped and read through, so its pages count in RSS: what is left is the
# analyzer's own memory.  A row per epoch costs about 450 bytes: 150,000 more epochs would be
# 65 MB.
def own_kib(name):
    return peak_kib("%s/%s.zst" % (W, name)) - os.path.getsize("%s/%s.zst" % (W, name)) // 1024
for kind in ("sum", "steady"):
    small, large = own_kib(kind + "50000"), own_kib(kind + "200000")
    if large - small > 2048:
        fail("%s: the analyzer's peak RSS less the trace's size grows with the epochs: %d KiB "
             "for 50,000, %d KiB for 200,000" % (kind, small, large))

# The fragmentation rows at the buckets' ends are those epochs' own, and what is ranked from
# them (the pinning at the most pinned epoch included) is what --all-epochs ranks.
d = json.load(open("%s/steady200000.json" % W))
full = json.load(open("%s/steady200000.all.json" % W))
rows, all_rows = d["fragmentation"], full["fragmentation"]
if not d["epoch_rows"]["buckets"] or len(rows) > 4096 + 2 or len(all_rows) != 200001:
    fail("steady200000: %d fragmentation rows by default (resolution %s), %d with --all-epochs"
         % (len(rows), d["epoch_rows"], len(all_rows)))
by_epoch = {r["epoch"]: r for r in all_rows}
ends = {b["last_epoch"] for b in d["epochs"]} | {0, 200000}
for r in rows:
    if r["epoch"] not in ends:
        fail("steady200000: fragmentation row of epoch %d, not a bucket's end" % r["epoch"])
    if by_epoch.get(r["epoch"]) != r:
        fail("steady200000: fragmentation at epoch %d: %s, per epoch %s" % (r["epoch"], r, by_epoch.get(r["epoch"])))
if len(rows) < len(d["epochs"]):
    fail("steady200000: %d fragmentation rows for %d buckets" % (len(rows), len(d["epochs"])))
for key in ("fragmentation_model", "fragmentation_callsites", "pinning", "fragmentation_size_classes"):
    if d.get(key) != full.get(key):
        fail("steady200000: %s differs between the bucketed and the --all-epochs run" % key)
dl = json.load(open("%s/leak199999.json" % W))
fl = json.load(open("%s/leak199999.all.json" % W))
if not dl["epoch_rows"]["buckets"] or "peak" not in fl["pinning"]:
    fail("leak199999: resolution %s, pinning ranked at %s" % (dl["epoch_rows"], list(fl["pinning"])))
if dl["pinning"] != fl["pinning"]:
    fail("leak199999: pinning ranked at epoch %s in buckets, %s per epoch"
         % (dl["pinning"].get("peak", {}).get("epoch"), fl["pinning"]["peak"]["epoch"]))
if "peak: the bucket end with the most RSS (buckets of up to %d epochs" % d["epoch_rows"]["width"] not in open("%s/steady200000.txt" % W).read():
    fail("steady200000: the text report's live-vs-fragmented rows do not say their resolution")

for name, epochs in (("sum200000", 200000), ("events", 20000)):
    d = json.load(open("%s/%s.json" % (W, name)))
    full = json.load(open("%s/%s.all.json" % (W, name)))
    rows, all_rows = d["epochs"], full["epochs"]
    res = d["epoch_rows"]
    if not res["buckets"] or len(rows) > 4096 or res["rows"] != len(rows):
        fail("%s: %d rows by default, resolution %s: want at most 4096 buckets" % (name, len(rows), res))
    width = res["width"]
    if width & (width - 1) or width < 2:
        fail("%s: bucket width %d is not a power of two above 1" % (name, width))
    if full["epoch_rows"]["buckets"] or full["epoch_rows"]["width"] != 1:
        fail("%s: --all-epochs still merged rows: %s" % (name, full["epoch_rows"]))
    # request_loop N: epochs 0..N (the last one the exit's), each with a summary
    want = list(range(0, epochs + 1))
    if [r["epoch"] for r in all_rows] != want:
        fail("%s: --all-epochs rows are not every epoch 0..%d (%d rows)" % (name, epochs, len(all_rows)))
    if rows[0]["epoch"] != 0 or rows[-1]["last_epoch"] != epochs:
        fail("%s: the buckets span %d..%d, want 0..%d" % (name, rows[0]["epoch"], rows[-1]["last_epoch"], epochs))
    # each bucket against the epochs it holds
    by_epoch = {r["epoch"]: r for r in all_rows}
    prev_last = -1
    for b in rows:
        if b["epoch"] != prev_last + 1:
            fail("%s: bucket at %d does not follow the one ending at %d" % (name, b["epoch"], prev_last))
        prev_last = b["last_epoch"]
        if b["epoch"] // width != b["last_epoch"] // width:
            fail("%s: bucket %d..%d is wider than %d" % (name, b["epoch"], b["last_epoch"], width))
        inner = [by_epoch[e] for e in range(b["epoch"], b["last_epoch"] + 1)]
        for key in ("allocs", "frees", "alloc_bytes", "free_bytes", "wall_ns", "cpu_ns",
                    "late_events", "dropped_events"):
            if b[key] != sum(r[key] for r in inner):
                fail("%s: bucket %d..%d: %s %d, its epochs sum to %d"
                     % (name, b["epoch"], b["last_epoch"], key, b[key], sum(r[key] for r in inner)))
        end = inner[-1]
        for key in ("live_count", "live_bytes", "live_usable_bytes", "rss_bytes", "counters"):
            if b[key] != end[key]:
                fail("%s: bucket %d..%d: %s %s, its last epoch's %s"
                     % (name, b["epoch"], b["last_epoch"], key, b[key], end[key]))
        checks = (("live_bytes_min", min(r["live_bytes"] for r in inner)),
                  ("live_bytes_max", max(r["live_bytes"] for r in inner)),
                  ("rss_bytes_max", max(r["rss_bytes"] for r in inner)),
                  ("wall_ns_max", max(r["wall_ns"] for r in inner)),
                  ("summaries", len(inner)), ("live_epochs", len(inner)))
        for key, v in checks:
            if b[key] != v:
                fail("%s: bucket %d..%d: %s %s, want %s" % (name, b["epoch"], b["last_epoch"], key, b[key], v))
        mean = sum(r["live_bytes"] for r in inner) / len(inner)
        if abs(b["live_bytes_mean"] - mean) > 1e-6 * max(1, abs(mean)):
            fail("%s: bucket %d..%d: live mean %s, want %s" % (name, b["epoch"], b["last_epoch"], b["live_bytes_mean"], mean))
    # merged or not, every fit is the same, and the leak is 48 bytes per epoch
    for key in ("growth", "functions", "totals", "peak", "lifetime", "leaked_at_exit"):
        if d[key] != full[key]:
            fail("%s: %s differs between the bucketed and the --all-epochs run" % (name, key))
    t, tf = d["trends"], full["trends"]
    for key in ("live_bytes_per_epoch", "live_bytes_r2", "rss_bytes_per_epoch", "rss_bytes_r2",
                "wall_ns_per_epoch", "wall_ns_r2", "duration_vs_live_correlation"):
        if t[key] != tf[key]:
            fail("%s: trends.%s %s bucketed, %s per epoch" % (name, key, t[key], tf[key]))
    if abs(t["live_bytes_per_epoch"] - 48) > 0.01:
        fail("%s: live bytes grow %s per epoch, want the leak's 48" % (name, t["live_bytes_per_epoch"]))
    leak = [g for g in d["growth"] if abs(g["bytes_per_epoch"] - 48) < 0.01]
    if not leak:
        fail("%s: no callsite grows by 48 bytes per epoch: %s" % (name, [g["bytes_per_epoch"] for g in d["growth"][:3]]))
    text = open("%s/%s.txt" % (W, name)).read()
    line = "Epochs 0..%d in %d buckets of %d" % (epochs, len(rows), width)
    if line not in text:
        fail("%s: the text report does not say its resolution (%r)" % (name, line))
    page = open("%s/%s.html" % (W, name)).read()
    card = "epochs, charted in %d buckets of %d" % (len(rows), width)
    if card not in page or page.count("<polyline") < 3:
        fail("%s: the page does not say its resolution (%r) or lacks its three charts" % (name, card))
PY
echo "PASS: t_epoch_buckets"
