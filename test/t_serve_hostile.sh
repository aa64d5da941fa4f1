#!/bin/sh
# churn serve facing bad traces and bad clients, on 127.0.0.1 only, every loop bounded.  It
# follows a directory holding a running program's trace (test/programs/request_loop.c), a
# file that is not a trace, and a trace whose segments were all damaged: the bad ones answer
# their requests with an HTTP error that says why (/metrics: churn_trace_readable 0), the
# good one answers as it should throughout.  Then the clients: a request line of 100 KB, a
# header of 64 KB, 2,000 headers, a POST, a method it does not know, binary junk, HTTP/0.9,
# bad query values (pid and seconds: letters, signs, huge, empty, repeated, NUL), a client
# that sends its request one byte every 0.3 s, one that connects and sends nothing, 200
# connections at once, 40 profiles asked at once.  Each gets an error or a closed
# connection, and after each the server still answers /metrics and the good profile.
. test/lib.sh

build_c request_loop test/programs/request_loop.c
mkdir -p "$WORK/traces"
"$ROOT/build/churn" run -o "$WORK/traces/good.zst" -- "$WORK/request_loop" 100000 5 \
    >/dev/null 2>"$WORK/run.err" &
run=$!
trap 'kill ${run:-} ${SERVE_PID:-} 2>/dev/null || true' EXIT
head -c 65536 /dev/urandom >"$WORK/traces/junk.zst"
# a finished trace with a byte of every segment's payload flipped: its header is good, no
# segment is
"$ROOT/build/churn" run -o "$WORK/damaged-src.zst" -- "$WORK/request_loop" 50 >/dev/null 2>&1 ||
    fail "request_loop 50 failed under churn run"
check "$WORK/damaged-src.zst" "$WORK/traces/damaged.zst" <<'PY'
import sys
from churncheck import *
data = bytearray(open(sys.argv[1], "rb").read())
heads = segment_headers(sys.argv[1])
if not heads:
    fail("the source trace has no segment")
for h in heads:
    data[h["offset"] + 56 + 8] ^= 0xff
open(sys.argv[2], "wb").write(data)
PY
serve_live "$WORK/traces"

check $port "$SERVE_PID" "$WORK/traces/good.zst" <<'PY'
import os, socket, sys, threading, time
from churncheck import *
from livecheck import *
port, server, good_trace = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def alive(what):
    """After each attack: the server runs, /metrics and the good profile answer."""
    try:
        os.kill(server, 0)
    except OSError:
        fail("churn serve died after %s" % what)
    status, _, body = get(port, "/metrics")
    if status != 200 or b"churn_live_bytes" not in body:
        fail("/metrics after %s: %d %r" % (what, status, body[:200]))
    status, _, body = get(port, "/debug/pprof/heap?pid=%d" % good)
    if status != 200 or body[:2] != b"\x1f\x8b":
        fail("the good profile after %s: %d %r" % (what, status, body[:200]))

def raw(data, wait=10):
    """Sends data on a new connection; what comes back until the server closes it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    try:
        s.sendall(data)
        out = b""
        while True:
            try:
                more = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not more:
                break
            out += more
        return out
    except (ConnectionResetError, BrokenPipeError):
        return b""
    finally:
        s.close()

def status_of(reply):
    line = reply.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) > 1 and line[1].isdigit() else None

# the traces
m = wait("the good trace to be read",
         lambda: (lambda s: s if value(s, "churn_live_bytes", trace=good_trace) else None)(
             metrics(port)), 60)
good = int([l for n, l, v in m if n == "churn_live_bytes"][0]["pid"])
readable = {os.path.basename(l["trace"]): v for n, l, v in m if n == "churn_trace_readable"}
expect("churn_trace_readable by trace", readable, {"good.zst": 1, "junk.zst": 0, "damaged.zst": 0})
status, _, body = get(port, "/")
for name in (b"junk.zst", b"damaged.zst", b"not a churn trace", b"damaged"):
    if name not in body:
        fail("the index page does not say %r: %r" % (name, body[:600]))
damaged_pid = int([l for n, l, v in m if n == "churn_trace_readable"
                   and l["trace"].endswith("damaged.zst")][0]["pid"])
status, _, body = get(port, "/debug/pprof/heap?pid=%d" % damaged_pid)
if status not in (500, 503) or b"damaged" not in body:
    fail("the damaged trace's profile answered %d %r" % (status, body[:200]))
alive("the bad traces")

# requests too large, or not what it serves
for what, data, want in [
        ("a 100 KB request line", b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", (414, 431, None)),
        ("a 64 KB header", b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Junk: " + b"j" * 65536 + b"\r\n\r\n", (431, 413, None)),
        ("2,000 headers", b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(2000)) + b"\r\n", (431, 413, None)),
        ("a POST", b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", (405,)),
        ("a DELETE", b"DELETE /debug/pprof/heap HTTP/1.1\r\nHost: x\r\n\r\n", (405,)),
        ("an unknown method", b"BREW /metrics HTTP/1.1\r\nHost: x\r\n\r\n", (405, 501)),
        ("binary junk", bytes(range(256)) * 16 + b"\r\n\r\n", (400, None)),
        ("HTTP/0.9", b"GET /metrics\r\n\r\n", (400, 505, None)),
        ("an unknown path", b"GET /debug/pprof/goroutine HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", (404,)),
        ("a path outside", b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", (404, 400)),
]:
    got = status_of(raw(data))
    if got not in want:
        fail("%s answered %s, not one of %s" % (what, got, want))
    alive(what)

# bad query values
for q in ["pid=abc", "pid=-1", "pid=+5", "pid=", "pid=1e3", "pid=99999999999999999999",
          "pid=%00", "pid=1%00", "seconds=0", "seconds=301", "seconds=-1", "seconds=1e3",
          "seconds=abc", "seconds=", "seconds=99999999999999999999", "seconds=%20"]:
    for path in ("/debug/pprof/heap", "/debug/pprof/allocs"):
        status, _, body = get(port, "%s?%s" % (path, q))
        if status != 400:
            fail("%s?%s answered %d, not 400: %r" % (path, q, status, body[:200]))
status, _, _ = get(port, "/debug/pprof/heap?pid=%d&pid=abc" % good)
expect("a repeated pid takes the first", status, 200)
alive("bad query values")

# a client that sends its request a byte every 0.3 s, and one that sends nothing: the others
# are answered meanwhile, and the silent one is closed by the idle timeout
slow = socket.create_connection(("127.0.0.1", port), timeout=60)
silent = socket.create_connection(("127.0.0.1", port), timeout=60)
def trickle():
    try:
        for b in b"GET /metrics HTTP/1.1\r\nHost: x\r\n":
            slow.send(bytes([b]))
            time.sleep(0.3)
    except OSError:
        pass
t = threading.Thread(target=trickle)
t.start()
for i in range(5):
    alive("a slow client, round %d" % i)
start = time.monotonic()
silent.settimeout(60)
try:
    closed = silent.recv(1) == b""
except (ConnectionResetError, socket.timeout):
    closed = True
if not closed or time.monotonic() - start > 40:
    fail("a silent connection was not closed within 40 s")
t.join()
slow.close()
alive("a slow and a silent client")

# 200 connections at once, then 40 profiles at once
conns = []
for i in range(200):
    try:
        conns.append(socket.create_connection(("127.0.0.1", port), timeout=10))
    except OSError:
        break
for c in conns:
    c.close()
# the server closes what it took beyond its limits, and its threads end as their clients go
def answers():
    try:
        return get(port, "/metrics", timeout=5)[0] == 200
    except OSError:
        return False
wait("the server to answer after 200 connections at once", answers, 15)
alive("200 connections at once")
results = []
def profile():
    try:
        results.append(get(port, "/debug/pprof/heap?pid=%d" % good)[0])
    except OSError as e:
        results.append(str(e))
threads = [threading.Thread(target=profile) for _ in range(40)]
for t in threads:
    t.start()
for t in threads:
    t.join()
bad = [r for r in results if r not in (200, 503)]
if bad or 200 not in results:
    fail("40 profiles at once answered %s" % sorted(set(map(str, results))))
alive("40 profiles at once")
print("hostile: %d requests of 40 at once answered, %d told to wait; the server goes on"
      % (results.count(200), results.count(503)))
PY
