#!/bin/sh
# redis-server's own books against libchurn's figures (docs/servers.md).  Debian's redis 7.0
# under `churn run`, an epoch at every call of evalMemory (INFO memory calls it right after it
# reads zmalloc's counter, with no allocation between) and one per USR2, sent once the server is
# quiet.  Each phase (start, three of 5,000 new keys, 2,000 keys with a 200 ms TTL expired,
# 5,000 DELs, FLUSHALL) ends with the signal (epoch 2k ends) and, 0.5 s later, an INFO memory
# (epoch 2k+1 ends at its reading).  Asserted (exactly, RSS within a bound):
# - INFO's used_memory = the usable bytes libchurn counts live at the end of epoch 2k+1 in the
#   stacks whose innermost frame is one of zmalloc.c's functions (zmalloc adds
#   malloc_usable_size of each block; what the libraries allocate, OpenSSL, Lua, libc, is not
#   in it);
# - cron's zmalloc_used behind INFO's figures (used_memory_rss - mem_fragmentation_bytes) = the
#   same at the end of epoch 2k, when cron read while the server was quiet; then also
#   allocator_allocated / allocator_active / allocator_resident = the jemalloc counters
#   libchurn recorded for epoch 2k, and the RSS split's heap = allocator_resident.  redis runs
#   with --jemalloc-bg-thread no: jemalloc's background thread purges at any moment, which
#   changes resident without a heap event;
# - used_memory_rss (/proc/self/stat, read by cron) against libchurn's RSS (/proc/self/statm,
#   at INFO's reading): within the kernel's per-CPU counter error, the change of libchurn's
#   own memory and what INFO's client allocated (the only memory that changes in between);
# - the text report answers what grew: over the three growth phases dictAddRaw (one entry per
#   key) is among the top three functions, and its live objects grew by exactly 15,000.
. test/lib.sh

command -v redis-server >/dev/null || fail "redis-server is missing (Debian redis-server)"
cli() { redis-cli -p $port "$@"; }

cat >"$WORK/gen.py" <<'PY'
import sys
# gen.py FIRST COUNT [TTL_MS]: SET commands (RESP) for keys key:FIRST .. key:FIRST+COUNT-1
first, count = int(sys.argv[1]), int(sys.argv[2])
ttl = sys.argv[3:4]
out = []
for i in range(first, first + count):
    args = ["SET", "key:%d" % i, "v" * 100] + (["PX"] + ttl if ttl else [])
    out.append("*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args))
sys.stdout.write("".join(out))
PY

timeout 120 "$ROOT/build/churn" run -o "$WORK/redis.zst" --epoch-at evalMemory --epoch-signal USR2 -- \
    redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no \
    --jemalloc-bg-thread no --dir "$WORK" >"$WORK/redis.out" 2>&1 &
cpid=$!
i=0
until cli ping >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 300 ] || { kill $cpid; fail "redis-server did not start under churn run: $(tail -n 1 "$WORK/redis.out")"; }
    sleep 0.1
done
rpid=$(cli info server | tr -d '\r' | sed -n 's/^process_id://p')
[ -n "$rpid" ] || { kill $cpid; fail "no process_id in INFO server"; }

# phase.py PORT PID OUT: one phase's end.  Connects first, so that no accept comes between the
# quiet epoch and INFO (a cron tick between an accept and its client's command would give
# INFO a reading with the client half made), and waits 0.3 s for cron to shrink the new
# client's reply buffer (its first pass does).  Then, once the server is quiet (the server's
# end of every other connection closed: redis frees a client when it reads the end of its
# connection, which can come after the client exits), USR2 ends epoch 2k as soon as its
# handler took it (no USR2 in SigPnd/ShdPnd), and 0.5 s later INFO memory ends epoch 2k+1.
cat >"$WORK/phase.py" <<'PY'
import os, signal, socket, sys, time
port, pid, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
s = socket.create_connection(("127.0.0.1", port))
mine = s.getsockname()[1]
time.sleep(0.3)
def others():
    n = 0
    for line in open("/proc/net/tcp").read().split("\n")[1:]:
        f = line.split()
        if len(f) > 3 and int(f[1].split(":")[1], 16) == port and f[3] in ("01", "08") \
                and int(f[2].split(":")[1], 16) != mine:
            n += 1
    return n
def wait(what, cond):
    for _ in range(200):
        if cond():
            return
        time.sleep(0.05)
    sys.exit("redis-server: " + what)
wait("clients still connected", lambda: others() == 0)
os.kill(pid, signal.SIGUSR2)
def taken():
    st = dict(l.split(":", 1) for l in open("/proc/%d/status" % pid).read().split("\n") if ":" in l)
    return not any(int(st[k], 16) & (1 << (signal.SIGUSR2 - 1)) for k in ("SigPnd", "ShdPnd"))
wait("USR2 not taken", taken)
time.sleep(0.5)
s.sendall(b"INFO memory\r\n")
data = b""
while b"\r\n" not in data or len(data) < data.index(b"\r\n") + 2 + int(data[1:data.index(b"\r\n")]) + 2:
    chunk = s.recv(65536)
    if not chunk:
        sys.exit("redis-server closed the connection")
    data += chunk
s.close()
open(out, "w").write(data.split(b"\r\n", 1)[1].decode().replace("\r", ""))
PY
k=0
phase() {
    python3 "$WORK/phase.py" $port "$rpid" "$WORK/info.$k" || { kill $cpid; fail "phase $k failed"; }
    k=$((k + 1))
}
load() {
    python3 "$WORK/gen.py" "$@" | cli --pipe >"$WORK/pipe.out" 2>&1 ||
        { kill $cpid; fail "redis-cli --pipe failed: $(tail -n 1 "$WORK/pipe.out")"; }
}
phase
for first in 0 5000 10000; do
    load $first 5000
    phase
done
load 100000 2000 200
n=0
until cli info keyspace | grep -q '^db0:keys=15000,expires=0,'; do
    n=$((n + 1))
    [ $n -lt 200 ] || { kill $cpid; fail "the 2,000 keys with a TTL did not expire: $(cli info keyspace | tail -n 1)"; }
    sleep 0.1
done
phase
i=0
while [ $i -lt 5000 ]; do
    echo "DEL key:$i"
    i=$((i + 1))
done | cli >/dev/null
phase
cli flushall >/dev/null
phase
cli shutdown nosave >/dev/null 2>&1 || true
wait $cpid || fail "churn run redis-server exited with status $?"

analyze "$WORK/redis.zst" "$WORK/all.json"
e=0
while [ $e -lt $((2 * k)) ]; do
    analyze "$WORK/redis.zst" "$WORK/upto$e.json" --epochs :$e
    e=$((e + 1))
done
"$ANALYZE" --epochs :7 "$WORK/redis.zst" >"$WORK/grow.txt" 2>&1 || fail "churn-analyze --epochs :7 failed"

check "$WORK" $k "$(cat /sys/devices/system/cpu/possible)" <<'PY'
import json, os, re, sys
from churncheck import *
work, phases, possible = sys.argv[1], int(sys.argv[2]), sys.argv[3]
report = load(os.path.join(work, "all.json"))
epochs = {e["epoch"]: e for e in field(report, "epochs")}
frag = {f["epoch"]: f for f in field(report, "fragmentation")}
expect("dropped events", field(report, "totals", "dropped_events"), 0)
# redis's setproctitle clears the environment: the entry libchurn added is none of its objects
expect("unknown frees", field(report, "totals", "unknown_frees"), 0)
# zmalloc.c's functions that call malloc, calloc or realloc and count malloc_usable_size
# (zstrdup has zmalloc inlined)
ZMALLOC = re.compile(r"^(z(malloc|calloc|realloc|trymalloc|trycalloc|tryrealloc)(_usable|_num)?|zstrdup) \(")
def zmalloc_usable(e):
    w = load(os.path.join(work, "upto%d.json" % e))
    return sum(c["usable_bytes"] for c in w["fragmentation_callsites"] if ZMALLOC.match(c["stack"][0]))
# the kernel's RSS is three per-CPU counters (file, anon, shmem pages); a reading that does
# not sum them (/proc/self/stat here; statm too on some kernels) is off by up to
# batch = max(32, 2 * CPUs) pages per CPU for each, and the two readings are compared
lo, _, hi = possible.partition("-")
cpus = int(hi or lo) + 1
page = os.sysconf("SC_PAGE_SIZE")
kernel_error = 2 * 3 * cpus * max(32, 2 * cpus) * page
compared = 0
for k in range(phases):
    info = dict(l.split(":", 1) for l in open(os.path.join(work, "info.%d" % k)).read().split("\n") if ":" in l)
    quiet, at_info = 2 * k, 2 * k + 1
    expect("phase %d: used_memory = live usable bytes allocated through zmalloc at epoch %d"
           % (k, at_info), zmalloc_usable(at_info), int(info["used_memory"]))
    cron_used = int(info["used_memory_rss"]) - int(info["mem_fragmentation_bytes"])
    q = epochs[quiet]
    if zmalloc_usable(quiet) != cron_used or q["counters_stale"]:
        # cron read after INFO's client connected, or the writer read late: another moment
        print("phase %d: cron's reading is not the quiet epoch's (%d vs %d), books not compared"
              % (k, cron_used, zmalloc_usable(quiet)))
        continue
    c = q["counters"]
    for mine, theirs in (("stats.allocated", "allocator_allocated"), ("stats.active", "allocator_active"),
                         ("stats.resident", "allocator_resident")):
        expect("phase %d: INFO %s = libchurn's %s at epoch %d" % (k, theirs, mine, quiet),
               c[mine], int(info[theirs]))
    expect("phase %d: RSS split's heap = allocator_resident" % k,
           frag[quiet]["heap_bytes"], int(info["allocator_resident"]))
    # RSS at INFO's reading: libchurn's own memory has settled since the signal (its writer
    # gives back what it used for the signal's segment, which the reading at the signal holds)
    i = epochs[at_info]
    own = abs(c["libchurn.own_resident_bytes"] - i["counters"]["libchurn.own_resident_bytes"])
    client = i["alloc_bytes"] + 4096 * (i["allocs"] + 1)  # INFO's client, after cron's tick
    diff = int(info["used_memory_rss"]) - i["rss_bytes"]
    if abs(diff) > kernel_error + own + client:
        fail("phase %d: used_memory_rss %s and libchurn's RSS %d at INFO differ by %d, more than "
             "the kernel's counter error %d, libchurn's own change %d and INFO's client %d"
             % (k, info["used_memory_rss"], i["rss_bytes"], diff, kernel_error, own, client))
    compared += 1
    print("phase %d: used_memory %s, allocated %s active %s resident %s exact; rss %+d B"
          % (k, info["used_memory"], info["allocator_allocated"], info["allocator_active"],
             info["allocator_resident"], diff))
# a writer that read the books late, or a cron that had not passed over phase.py's new client
# before the signal, moves a phase off the quiet epoch: rare
if compared < 4:
    fail("only %d of %d phases had cron's reading in the quiet epoch" % (compared, phases))
# what grew: epochs 2..7 are the three phases of 5,000 new keys
def func(r, name):
    rows = [f for f in r["functions"] if f["function"] == name]
    if len(rows) != 1:
        fail("%d rows of %s in the functions" % (len(rows), name))
    return rows[0]
grow = load(os.path.join(work, "upto7.json"))
expect("dictAddRaw's live objects over the three growth phases",
       func(grow, "dictAddRaw")["live_count"] - func(load(os.path.join(work, "upto1.json")), "dictAddRaw")["live_count"],
       15000)
text = open(os.path.join(work, "grow.txt")).read()
top = re.findall(r"^  #[123] (\S+) ", text.split("Top functions", 1)[1], re.M)[:3]
if "dictAddRaw" not in top:
    fail("the text report's top functions over the growth do not name dictAddRaw: %s" % top)
print("%d phases: used_memory exact in each, books and RSS compared in %d; growth: %s" % (phases, compared, top))
PY
