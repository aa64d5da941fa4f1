#!/bin/sh
# churn serve's pprof endpoints, read by Debian's `go tool pprof` as it reads a Go program's:
# the demo workload (test/programs/request_loop.c, one epoch per request, a 48-byte session
# leaked by remember_session each, 8 responses of 4 KiB parked by stash_response) runs under
# churn run while churn serve follows its trace.  Once the leak holds more than the parked
# responses (1,000 requests), /debug/pprof/heap by inuse_space names remember_session first,
# /debug/pprof/allocs by alloc_space names format_reply first (its replies, 12 KiB each, are
# most of what is allocated), a delta profile (?seconds=2) holds only what the leak added
# in those seconds, and ?pid= picks the process.  The sample types are Go's, in Go's order.
# churn serve follows the run's index (t.index): when a second run replaces the trace, the
# new run is served in its place.
. test/lib.sh
command -v go >/dev/null || fail "go is missing (Debian golang-go; make check installs it)"

build_c request_loop test/programs/request_loop.c
"$ROOT/build/churn" run -o "$WORK/t.zst" -- "$WORK/request_loop" 100000 5 \
    >/dev/null 2>"$WORK/run.err" &
run=$!
trap 'kill ${run:-} ${SERVE_PID:-} 2>/dev/null || true' EXIT
serve_live "$WORK/t.index"

check $port <<'PY'
import sys
from livecheck import *
port = int(sys.argv[1])
wait("1,000 epochs read", lambda: (value(metrics(port), "churn_epoch") or 0) >= 1000, 120)
PY

# go tool pprof keeps what it fetched under $PPROF_TMPDIR.
pprof() {
    HOME="$WORK" PPROF_TMPDIR="$WORK/pprof" GOCACHE="$ROOT/build/cache/go" GOFLAGS= \
        go tool pprof "$@" 2>"$WORK/pprof.err" || fail "go tool pprof $*: $(tail -n 1 "$WORK/pprof.err")"
}
mkdir -p "$WORK/pprof"
pprof -top -sample_index=inuse_space "http://127.0.0.1:$port/debug/pprof/heap" >"$WORK/heap.top"
pprof -top -sample_index=alloc_space "http://127.0.0.1:$port/debug/pprof/allocs" >"$WORK/allocs.top"
pprof -top -sample_index=inuse_space "http://127.0.0.1:$port/debug/pprof/heap?seconds=2" >"$WORK/delta.top"
pprof -raw "http://127.0.0.1:$port/debug/pprof/allocs" >"$WORK/allocs.raw"
pid=$(sed -n 's/^libchurn trace of pid \([0-9]*\),.*/\1/p' "$WORK/heap.top")
[ -n "$pid" ] || fail "the profile does not name its pid: $(head -n 5 "$WORK/heap.top")"
pprof -top -sample_index=inuse_space "http://127.0.0.1:$port/debug/pprof/heap?pid=$pid" >"$WORK/pid.top"

check "$WORK" $port $pid <<'PY'
import os, re, sys
from churncheck import *
from livecheck import *
work, port, pid = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def first(name):
    """The function of the first row of a -top table, and the table's type line."""
    lines = open(os.path.join(work, name)).read().split("\n")
    kind = [l for l in lines if l.startswith("Type: ")]
    rows = lines[[i for i, l in enumerate(lines) if l.strip().startswith("flat")][0] + 1:]
    return rows[0].split()[-1], kind[0] if kind else None

expect("inuse_space's first function", first("heap.top"), ("remember_session", "Type: inuse_space"))
expect("alloc_space's first function", first("allocs.top"), ("format_reply", "Type: alloc_space"))
expect("the delta's first function", first("delta.top")[0], "remember_session")
expect("?pid=%s's first function" % pid, first("pid.top")[0], "remember_session")
raw = open(os.path.join(work, "allocs.raw")).read().split("\n")
at = raw.index("Samples:")
types = raw[at + 1].split()
expect("sample types", types, ["alloc_objects/count", "alloc_space/bytes[dflt]",
                               "inuse_objects/count", "inuse_space/bytes"])
if not any(re.search(r"pid:\[%s\]" % pid, l) for l in raw):
    fail("no sample is labelled with pid %s" % pid)
status, _, body = get(port, "/debug/pprof/heap?pid=1")
expect("a pid that is not followed", status, 404)
status, headers, body = get(port, "/debug/pprof/heap")
expect("the heap profile's status", status, 200)
expect("gzip", body[:2], b"\x1f\x8b")
print("pprof: %s first by inuse_space and in the delta, format_reply by alloc_space" %
      first("heap.top")[0])
PY

# A second run at the same path: the first one's follower is let go, the new run is served.
kill $run
wait $run || true
"$ROOT/build/churn" run -o "$WORK/t.zst" -- "$WORK/request_loop" 100000 5 \
    >/dev/null 2>"$WORK/run2.err" &
run=$!
check $port $pid <<'PY'
import sys
from livecheck import *
port, old = int(sys.argv[1]), sys.argv[2]
def new_run():
    pids = {l["pid"] for n, l, v in metrics(port) if n == "churn_live_bytes"}
    return pids if pids and old not in pids else None
pids = wait("the second run to replace the first", new_run, 60)
new = pids.pop()
status, _, body = get(port, "/debug/pprof/heap?pid=%s" % new)
if status != 200 or body[:2] != b"\x1f\x8b":
    fail("the second run's profile: %d %r" % (status, body[:100]))
status, _, _ = get(port, "/debug/pprof/heap?pid=%s" % old)
if status != 404:
    fail("the first run's pid %s answered %d, not 404" % (old, status))
print("the second run (pid %s) replaced the first (pid %s)" % (new, old))
PY
