#!/bin/sh
# memcached (Debian 12's memcached 1.6.18-1+deb12u1, checked against that version), whose slab
# allocator takes 1 MiB pages from malloc and carves its items in them: 4 worker threads,
# 20,000 sets of 1000-byte values over the text protocol, every 7th key read back, then
# `stats` and `stats slabs`, stopped by SIGTERM (memcached's graceful stop), under
# `churn run --epoch-ms 100` three times and once under heaptrack.
#  - behaviour: the same replies (STORED for every set, the values read back, the same item
#    count and byte count in `stats`) and exit status 0 as the native run;
#  - the trace: an exit record, no dropped event, and its last epoch the exit's (the server
#    sits idle for a second before the stop: test/t_idle_exit.sh);
#  - figures against memcached's own books: the 1 MiB pages live at the exit, summed over
#    their callsites, are `stats slabs` total_malloced exactly, and the top function by live
#    bytes is the one that allocates them, via memory_allocate (the pages' innermost frame);
#  - against heaptrack 1.4 on the same workload: its "calls to allocation functions" is
#    libchurn's count plus heaptrack's own one (libstdc++'s emergency pool, which its preload
#    pulls in), and its heap at the end is libchurn's live bytes at the exit within 16 KiB
#    (each tracer's environment, and the leaks heaptrack suppresses);
#  - the RSS split at the epoch of the `stats` reading: the heap (live, slack, pinned,
#    free-resident) is within RssAnon of /proc/PID/status (at most 1 MiB over it: the last
#    slab page is partly touched) and at most 8 MiB under it (the threads' stacks, the
#    libraries' data and libchurn's own buffers are anonymous too); nothing is "not traced".
. test/lib.sh

VERSION=1.6.18-1+deb12u1
for tool in memcached heaptrack heaptrack_print; do
    command -v $tool >/dev/null || fail "$tool is missing (make check installs it)"
done
got=$(dpkg-query -W -f '${Version}' memcached 2>/dev/null) || fail "memcached is not installed"
[ "$got" = "$VERSION" ] || fail "memcached $got: this test was checked against $VERSION"

as_root=""
[ "$(id -u)" = 0 ] && as_root="-u root"

# serve NAME PREFIX...: memcached under PREFIX, the workload, SIGTERM; NAME.* the results
serve() {
    name=$1
    shift
    timeout 120 "$@" memcached $as_root -p $port -U 0 -l 127.0.0.1 -m 64 -t 4 \
        >"$WORK/$name.out" 2>"$WORK/$name.err" &
    pid=$!
    n=0
    until python3 -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2>/dev/null; do
        n=$((n + 1))
        [ $n -lt 300 ] || { kill $pid; fail "$name: memcached did not start: $(tail -n 1 "$WORK/$name.err")"; }
        sleep 0.1
    done
    python3 - "$port" "$WORK/$name" >"$WORK/$name.replies" <<'PY' || { kill $pid; fail "$name: the workload failed"; }
import os, socket, sys
port, out = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rwb")
value = b"v" * 1000
def send(line, data=None):
    f.write(line.encode() + b"\r\n" + (data + b"\r\n" if data is not None else b""))
    f.flush()
for i in range(20000):
    send("set key%d 0 0 %d" % (i, len(value)), value)
    r = f.readline()
    assert r == b"STORED\r\n", r
hits = 0
for i in range(0, 20000, 7):
    send("get key%d" % i)
    r = f.readline()
    if r.startswith(b"VALUE"):
        assert f.read(len(value) + 2)[:-2] == value and f.readline() == b"END\r\n"
        hits += 1
    else:
        assert r == b"END\r\n", r
def stats(arg=""):
    send("stats" + (" " + arg if arg else ""))
    got = {}
    while True:
        line = f.readline().decode().strip()
        if line == "END":
            return got
        _, k, v = line.split(" ", 2)
        got[k] = v
st, slabs = stats(), stats("slabs")
with open(out + ".status", "w") as o:
    o.write(open("/proc/%s/status" % st["pid"]).read())
with open(out + ".books", "w") as o:
    o.write("%s %s %s\n" % (st["pid"], slabs["total_malloced"], st["time"]))
print("hits", hits, "items", st["curr_items"], "bytes", st["bytes"], "malloced", slabs["total_malloced"])
PY
    sleep 1.2 # idle, as a server is before it is stopped
    kill -TERM "$(cut -d' ' -f1 "$WORK/$name.books")"
    status=0
    wait $pid || status=$?
    echo $status >"$WORK/$name.exit"
}

serve native
[ "$(cat "$WORK/native.exit")" = 0 ] || fail "native memcached exited with status $(cat "$WORK/native.exit")"
for run in 1 2 3; do
    rm -f "$WORK"/t$run.*
    serve churn$run "$ROOT/build/churn" run --epoch-ms 100 -o "$WORK/t$run.zst"
    [ "$(cat "$WORK/churn$run.exit")" = 0 ] ||
        fail "run $run: memcached under churn run exited with status $(cat "$WORK/churn$run.exit")"
    cmp -s "$WORK/native.replies" "$WORK/churn$run.replies" ||
        fail "run $run: memcached replied $(cat "$WORK/churn$run.replies"), natively $(cat "$WORK/native.replies")"
done
analyze "$WORK/t1.zst" "$WORK/t1.json"
rm -f "$WORK"/ht.*
serve heaptrack heaptrack -o "$WORK/ht"
cmp -s "$WORK/native.replies" "$WORK/heaptrack.replies" || fail "memcached replied differently under heaptrack"
heaptrack_print -f "$WORK"/ht.zst -M "$WORK/ht.massif" --massif-threshold 0 >"$WORK/ht.txt" 2>&1 ||
    fail "heaptrack_print failed: $(tail -n 1 "$WORK/ht.txt")"

check "$WORK/t1.json" "$WORK/churn1.books" "$WORK/churn1.status" "$WORK/ht.txt" "$WORK/ht.massif" <<'PY'
import re, sys
from churncheck import *
r = load(sys.argv[1])
pid, malloced, _ = (int(x) for x in open(sys.argv[2]).read().split())
expect("the trace's pid", field(r, "metadata", "pid"), pid)
expect("the trace's exit", field(r, "metadata", "exit", "how"), "normal")
expect("dropped events", field(r, "totals", "dropped_events"), 0)
last = max(epochs(r))
expect("the trace's last epoch (the exit's)", field(r, "metadata", "last_epoch"), last)

PAGE = 1 << 20
pages = [g for g in field(r, "growth") if g["live_count"] and g["live_bytes"] == g["live_count"] * PAGE]
expect("bytes in 1 MiB pages live at the exit (stats slabs total_malloced)",
       sum(g["live_bytes"] for g in pages), malloced)
top = max(field(r, "functions"), key=lambda f: f["live_bytes"])
if top["live_bytes"] < malloced:
    fail("the top function by live bytes holds %d, the slab pages %d" % (top["live_bytes"], malloced))
# memcached is stripped: the row is the function that keeps the pages, named by its start,
# via memory_allocate (which returns what malloc returned), the pages' innermost frame
frame_of = lambda fn, frame: frame.startswith(fn + " (")
if not any(frame_of(top["function"], g["stack"][1 if top["via"] else 0]) and
           (not top["via"] or frame_of(top["via"], g["stack"][0])) for g in pages):
    fail("the top function %s via %s does not allocate the slab pages: %s" %
         (top["function"], top["via"], pages[0]["stack"][:2]))

ht = open(sys.argv[4]).read()
calls = int(re.search(r"calls to allocation functions: (\d+)", ht)[1])
expect("heaptrack's allocation calls (libchurn's + heaptrack's own one)", calls,
       field(r, "totals", "allocs") + 1)
heap_end = int(re.findall(r"mem_heap_B=(\d+)", open(sys.argv[5]).read())[-1])
live = field(r, "leaked_at_exit", "bytes")
if abs(heap_end - live) > 16384:
    fail("heaptrack's heap at the end %d, libchurn's live at the exit %d" % (heap_end, live))

status = {k: int(v.split()[0]) * 1024 for k, v in (l.split(":", 1) for l in open(sys.argv[3]))
          if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem")}
rows = [x for x in field(r, "fragmentation") if x["epoch"] != last]
row = rows[-1] # the epochs after the workload are idle: the last before the exit's
heap = row["live_bytes"] + row["slack_bytes"] + row["pinned_bytes"] + (row["free_resident_bytes"] or 0)
if not status["RssAnon"] - 8 * PAGE <= heap <= status["RssAnon"] + PAGE:
    fail("epoch %d: heap %d bytes, RssAnon %d" % (row["epoch"], heap, status["RssAnon"]))
for x in field(r, "fragmentation"):
    if (x["untraced_bytes"] or 0) > PAGE:
        fail("epoch %d: %d bytes 'not traced'" % (x["epoch"], x["untraced_bytes"]))
print("slab pages %d = total_malloced %d; heaptrack calls %d, libchurn %d; heap at end %d, live %d; "
      "epoch %d heap %d, RssAnon %d, rss %d, VmRSS %d" % (
          sum(g["live_bytes"] for g in pages), malloced, calls, field(r, "totals", "allocs"),
          heap_end, live, row["epoch"], heap, status["RssAnon"], row["rss_bytes"], status["VmRSS"]))
PY
echo "ok: memcached $VERSION, 3 runs reply as natively and exit 0; slab pages = total_malloced; heaptrack agrees"
