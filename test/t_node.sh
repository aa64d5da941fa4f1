#!/bin/sh
# End to end against node (V8, the pinned nodejs.org build from test/node/install.sh):
# `LD_PRELOAD=libchurn.so node test/node/server.js` under a bounded loopback load
# (test/node/drive.py: one keep-alive connection, one request at a time),
# one epoch per request: CHURN_EPOCH_AT=llhttp__on_message_begin, which node's HTTP parser
# calls at the start of every message it parses.  A handler that keeps a 16 KiB Buffer per
# request (its bytes outside V8's heap, from node's ArrayBuffer allocator) must grow by that
# much per epoch at that callsite, as node's own arrayBuffers figure does; a handler that drops
# it must not grow.  V8's heap pages come from mmap, outside malloc: they must be in the trace
# as page-level records made by V8's page allocator.
. test/lib.sh

REQUESTS=2000
BUFFER=16384    # test/node/server.js's Buffer size
EPOCH_FUNCTION=llhttp__on_message_begin

# The pinned nodejs.org build (test/node/install.sh), whatever `node` the machine has.
NODE=$(test/node/install.sh 2>"$WORK/install.err") || fail "$(tail -n 1 "$WORK/install.err")"
# That build links node's own code into the executable with its symbol table: the epoch
# function must be there, and addr2line names V8's frames from it.
nm "$NODE" 2>/dev/null | grep -q " T $EPOCH_FUNCTION\$" ||
    fail "$NODE ($("$NODE" --version)) does not define $EPOCH_FUNCTION in its symbol table (stripped?): CHURN_EPOCH_AT cannot begin an epoch per request"

# drive NAME MODE: node under the shim serves $REQUESTS requests and leaves through /exit.
drive() {
    status=0
    python3 test/node/drive.py --node "$NODE" --mode "$2" --requests "$REQUESTS" \
        --log "$WORK/$1.log" --env "LD_PRELOAD=$SHIM" --env "CHURN_OUT=$WORK/$1.zst" \
        --env "CHURN_EPOCH_AT=$EPOCH_FUNCTION" >"$WORK/$1.json" 2>"$WORK/$1.err" || status=$?
    if [ "$status" -ne 0 ]; then
        tail -n 5 "$WORK/$1.log" 2>/dev/null || true
        fail "node ($1): $(tail -n 1 "$WORK/$1.err")"
    fi
    [ -s "$WORK/$1.zst" ] || fail "node ran under the shim but wrote no trace"
    analyze "$WORK/$1.zst" "$WORK/$1.report.json"
    # The requests' epochs alone (not start-up, not /exit): the window node's answers cover.
    status=0
    "$ANALYZE" --json --epochs "1:$REQUESTS" "$WORK/$1.zst" >"$WORK/$1.window.json" \
        2>"$WORK/$1.window.err" || status=$?
    [ "$status" -eq 0 ] || fail "churn-analyze --epochs: $(tail -n 1 "$WORK/$1.window.err")"
}

drive leak leak
drive clean clean

check "$NODE" "$BUFFER" "$WORK" <<'PY'
import subprocess
import sys
from churncheck import *

node, buffer, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def slope(ys):
    """Least-squares slope of ys against 1, 2, 3, ..."""
    n = len(ys)
    mx, my = (n + 1) / 2, sum(ys) / n
    return sum((x - mx) * (y - my) for x, y in enumerate(ys, 1)) / sum((x - mx) ** 2 for x in range(1, n + 1))

def buffer_callsites(report):
    """Backing stores allocated by node's ArrayBuffer allocator while a request is handled
    (under the HTTP parser's headers-complete callback into JavaScript).  One callsite per
    JavaScript path (Buffer.alloc's first calls, then its interpreted and optimized code), so
    the slopes are added: the fits share their epochs."""
    return [g for g in field(report, "growth") if g["stack"] and
            g["stack"][0].startswith("node::NodeArrayBufferAllocator::") and
            any("Parser::on_headers_complete()" in f for f in g["stack"])]

def v8_page_maps(trace):
    """mmap records of the trace (decoded here, not by the analyzer) whose stack runs through
    V8's heap page allocator, symbolized with addr2line against node's executable."""
    recs = records(trace)
    stacks = {}
    for r in recs:
        if r["tag"] == 0x03:
            ips, ip = [], 0
            for delta in r["ips"]:
                ip += delta
                ips.append(ip)
            stacks[r["id"]] = ips
    maps = [r for r in recs if r["tag"] & 0xF0 == 0x40]
    ips = sorted({ip for r in maps if not r["internal"] for ip in stacks.get(r["stack"], [])[:4]})
    out = subprocess.run(["addr2line", "-f", "-C", "-e", node] + ["%#x" % (ip - 1) for ip in ips],
                         stdout=subprocess.PIPE, text=True, check=True).stdout.splitlines()[::2]
    names = dict(zip(ips, out))
    def by_v8(r):
        frames = [names.get(ip, "") for ip in stacks.get(r["stack"], [])[:4]]
        return any(f.startswith("v8::internal::MemoryAllocator::") for f in frames)
    return maps, [r for r in maps if not r["internal"] and by_v8(r)]

runs = {}
for name in ("leak", "clean"):
    summary = load("%s/%s.json" % (work, name))
    report = load("%s/%s.report.json" % (work, name))
    window = load("%s/%s.window.json" % (work, name))
    meta = field(report, "metadata")
    expect(name + ": trace pid", field(meta, "pid"), field(summary, "pid"))
    expect(name + ": segments dropped", field(meta, "segments_dropped"), 0)
    expect(name + ": recorded exit", field(meta, "exit"), {"how": "normal", "detail": 0})
    # V8's threads free what the main thread allocated: each free pairs with its own
    # allocation (docs/format.md, "Order of events").
    expect(name + ": warnings about pairing", [w for w in field(report, "warnings")
           if "never allocated" in w or "differ from the live object" in w or "displaced" in w],
           [])
    answers = field(summary, "answers")
    # Epoch 0 is node's start-up, request k is epoch k, /exit the last one.
    expect(name + ": epochs with a summary", [e["epoch"] for e in field(report, "epochs") if e["summary"]],
           list(range(len(answers) + 2)))
    sites = buffer_callsites(window)
    if not sites:
        fail("%s: no callsite of node::NodeArrayBufferAllocator under the HTTP parser" % name)
    traced = sum(g["bytes_per_epoch"] for g in sites)
    own = slope([a["array_buffers"] for a in answers])
    # node's process.memoryUsage().arrayBuffers is read in the handler, at the end of the
    # request's epoch: the trace and node must tell the same story.
    if abs(traced - own) > 0.01 * buffer:
        fail("%s: Buffer backing stores grow %.0f B/request in the trace, %.0f in node's arrayBuffers"
             % (name, traced, own))
    maps, v8 = v8_page_maps("%s/%s.zst" % (work, name))
    expect(name + ": totals.map_calls against the map records in the trace",
           field(report, "totals", "map_calls"), len(maps))
    pages = [r for r in v8 if r["kind"] == 0]
    if len(pages) < 4 or any(r["address"] % 262144 for r in pages if r["length"] < 1 << 20):
        fail("%s: V8's heap pages are not in the trace as mmap records: %s"
             % (name, [(hex(r["address"]), r["length"], r["epoch"]) for r in pages][:8]))
    net = sum(r["length"] if r["kind"] == 0 else -r["length"] for r in v8 if r["kind"] in (0, 1))
    # V8's pages are outside the allocator: the breakdown's program_mapped_bytes holds at least
    # what V8 mapped and kept, and its outside_heap_bytes is most of RSS (V8's heap, code).
    frag = {r["epoch"]: r for r in field(report, "fragmentation")}
    last = frag.get(len(answers))
    if not last or last["program_mapped_bytes"] is None:
        fail("%s: no fragmentation row for the last request (epoch %d)" % (name, len(answers)))
    if last["program_mapped_bytes"] < net:
        fail("%s: program_mapped_bytes %d at the last request, V8 alone kept %d B mapped"
             % (name, last["program_mapped_bytes"], net))
    if not last["outside_heap_bytes"] > last["rss_bytes"] / 2:
        fail("%s: outside the allocator %d of %d B RSS" % (name, last["outside_heap_bytes"], last["rss_bytes"]))
    runs[name] = {"sites": sites, "traced": traced, "own": own, "window": window,
                  "pages": pages, "v8_net": net, "answers": answers}

leak, clean = runs["leak"], runs["clean"]
top = field(leak["window"], "growth")[0]
if top not in leak["sites"]:
    fail("leak: the top growth callsite is not a Buffer backing store: %s" % top["stack"][:3])
if abs(leak["traced"] - buffer) > 0.01 * buffer:
    fail("leak: Buffer backing stores grow %.0f B/request, the handler keeps %d" % (leak["traced"], buffer))
kept = sum(g["live_count"] for g in leak["sites"])
if kept < 0.99 * len(leak["answers"]):
    fail("leak: %d Buffer backing stores live at the end of %d requests" % (kept, len(leak["answers"])))
if not abs(clean["traced"]) < 0.05 * buffer:
    fail("clean: Buffer backing stores grow %.0f B/request with every Buffer dropped" % clean["traced"])
allocated = sum(g["allocs"] for g in clean["sites"])
live = sum(g["live_count"] for g in clean["sites"])
if allocated < 0.99 * len(clean["answers"]) or live > 0.1 * allocated:
    fail("clean: %d of %d Buffer backing stores still live at the end" % (live, allocated))

print("node: leak +%.0f B/request at NodeArrayBufferAllocator (%d callsites; node's arrayBuffers"
      " +%.0f), clean %+.0f B/request (node %+.0f), %d of %d freed; V8 heap pages: %d mmaps"
      " (%d during requests), net %d B mapped by V8 in the leak run, %d B in the clean run"
      % (leak["traced"], len(leak["sites"]), leak["own"], clean["traced"], clean["own"],
         allocated - live, allocated, len(leak["pages"]),
         sum(1 for r in leak["pages"] if r["epoch"] > 0), leak["v8_net"], clean["v8_net"]))
PY
