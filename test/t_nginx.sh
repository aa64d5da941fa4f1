#!/bin/sh
# nginx (Debian 12's nginx-light 1.22.1-9+deb12u11, checked against that version): a master
# and one forked worker that switches to user nobody, under `churn run`, 200 requests (a
# 27 KiB static file and a `return 200`), stopped by SIGQUIT, nginx's graceful stop.
#  - behaviour: the same responses (status and a digest of every body) and exit status 0
#    as the native run, three times;
#  - the tree: both images end "exit 0", neither was killed, the index has both end lines
#    (the worker, running as nobody by then, writes its own through the descriptor its start
#    line opened), and the worker is named by its title, "nginx: worker process";
#  - figures against valgrind (memcheck 3.19, --run-libc-freeres=no so that glibc's own
#    buffers stay live at exit as they do natively): the allocation calls of the master and
#    the objects live at each image's exit (the worker's inherited copies included) are the
#    same counts; bytes differ by nginx's copy of the environment (each tracer sets its own
#    variables), at most 1 KiB;
#  - the worker's report does not blame it for what it inherited: no "freed but never
#    allocated" warning for the parent's objects it frees, and no callsite that allocated
#    nothing in the worker is "leaked".
. test/lib.sh

VERSION=1.22.1-9+deb12u11
command -v nginx >/dev/null || fail "nginx is missing (Debian nginx-light; make check installs it)"
command -v valgrind >/dev/null || fail "valgrind is missing (make check installs it)"
got=$(dpkg-query -W -f '${Version}' nginx-light 2>/dev/null) || fail "nginx-light is not installed"
[ "$got" = "$VERSION" ] || fail "nginx-light $got: this test was checked against $VERSION"

mkdir -p "$WORK/html" "$WORK/tmp"
python3 -c 'import random,sys; r=random.Random(7); sys.stdout.write("".join(r.choice("abcdef0123456789\n") for _ in range(27000)))' >"$WORK/html/index.html"
cat >"$WORK/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
error_log $WORK/error.log;
pid $WORK/nginx.pid;
events { worker_connections 64; }
http {
  access_log $WORK/access.log;
  client_body_temp_path $WORK/tmp;
  proxy_temp_path $WORK/tmp;
  fastcgi_temp_path $WORK/tmp;
  uwsgi_temp_path $WORK/tmp;
  scgi_temp_path $WORK/tmp;
  server { listen 127.0.0.1:$port; root $WORK/html; location /e { return 200 "ok\n"; } }
}
EOF

# serve NAME PREFIX...: nginx under PREFIX, the requests, SIGQUIT; NAME.load has the results,
# NAME.status nginx's (or its wrapper's) exit status.
serve() {
    name=$1
    shift
    http_serve "$name" "$WORK/nginx.pid" QUIT "200 2 /e" "$@" nginx -c "$WORK/nginx.conf" -p "$WORK"
}

serve_like_native nginx '^\[(200, 200)\]'
"$ANALYZE" --tree --json "$WORK/t1.index" >"$WORK/tree.json" 2>"$WORK/tree.err" ||
    fail "churn-analyze --tree failed: $(tail -n 1 "$WORK/tree.err")"
"$ANALYZE" --tree "$WORK/t1.index" >"$WORK/tree.txt" 2>&1 || fail "churn-analyze --tree (text) failed"
grep -q "^churn:   .* killed " "$WORK/churn1.err" && fail "churn run calls an image killed: $(grep -m1 killed "$WORK/churn1.err")"

serve valgrind valgrind --trace-children=yes --run-libc-freeres=no --run-cxx-freeres=no
cmp -s "$WORK/native.load" "$WORK/valgrind.load" || fail "nginx answered differently under valgrind"

[ "$(grep -c "^end$(printf '\t')" "$WORK/t1.index")" -eq 2 ] ||
    { cat "$WORK/t1.index"; fail "the index has not an end line for each image"; }

check "$WORK/tree.json" "$WORK/valgrind.err" "$WORK/tree.txt" <<'PY'
import re, sys
from churncheck import *
tree = load(sys.argv[1])
procs = tree["processes"]
expect("images traced (master, worker)", len(procs), 2)
master = [p for p in procs if p["parent"] not in [q["pid"] for q in procs]][0]
worker = [p for p in procs if p is not master][0]
for p in procs:
    expect("pid %d's end" % p["pid"], p["end"], "exit 0")
    md = p["report"]["metadata"]
    expect("pid %d's trace exit" % p["pid"], md["exit"]["how"], "normal")
    expect("pid %d's dropped events" % p["pid"], p["report"]["totals"]["dropped_events"], 0)
expect("images killed", tree["summary"]["totals"]["killed"], 0)
if not worker["command"].startswith("nginx: worker process"):
    fail("the worker is named %r, not by its title" % worker["command"])
if "Killed:" in open(sys.argv[3]).read():
    fail("the tree's text says an image was killed")

# valgrind: one "in use at exit" and "total heap usage" per process, the master's first pid
vg = {}
for line in open(sys.argv[2]):
    m = re.match(r"==(\d+)==\s+in use at exit: ([\d,]+) bytes in ([\d,]+) blocks", line)
    if m:
        vg.setdefault(int(m[1]), {})["live"] = (int(m[3].replace(",", "")), int(m[2].replace(",", "")))
    m = re.match(r"==(\d+)==\s+total heap usage: ([\d,]+) allocs, ([\d,]+) frees", line)
    if m:
        vg.setdefault(int(m[1]), {})["calls"] = (int(m[2].replace(",", "")), int(m[3].replace(",", "")))
if len(vg) != 2:
    fail("valgrind reported %d processes, not 2" % len(vg))
vmaster, vworker = vg[min(vg)], vg[max(vg)]
mt = master["report"]["totals"]
# valgrind counts a realloc as one of its allocs (and one free when it moved or shrank a block)
expect("master's allocation calls (valgrind's allocs)", mt["allocs"], vmaster["calls"][0])
for name, p, v in (("master", master, vmaster), ("worker", worker, vworker)):
    live = p["report"]["leaked_at_exit"]
    expect("%s's objects live at exit (valgrind's blocks in use)" % name, live["count"], v["live"][0])
    if abs(live["bytes"] - v["live"][1]) > 1024:
        fail("%s: %d bytes live at exit, valgrind %d" % (name, live["bytes"], v["live"][1]))

w = worker["report"]
for msg in w["warnings"]:
    if "never allocated" in msg:
        fail("the worker is warned of its frees of its parent's objects: " + msg)
for f in w["functions"]:
    if f["retention"] == "leaked" and not f["allocs"]:
        fail("the worker's %s is called leaked with no allocation in the worker" % f["function"])
print("master %d calls, live at exit %s; worker live at exit %s (valgrind %s, %s)" % (
    mt["allocs"], master["report"]["leaked_at_exit"], w["leaked_at_exit"], vmaster, vworker))
PY
echo "ok: nginx $VERSION, 3 runs answer as natively and exit 0; both images exit 0; live at exit matches valgrind"
