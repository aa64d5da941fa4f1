#!/bin/sh
# lighttpd (Debian 12's lighttpd 1.4.69-1, checked against that version): one process serving
# 300 requests (a 27 KiB static file, every third one a 404) under `churn run`, stopped by
# SIGINT, lighttpd's graceful stop.
#  - behaviour: the same statuses and a digest of every body, and exit status 0, as natively,
#    three times; the trace has its exit record and no dropped event;
#  - against valgrind (memcheck 3.19, --run-libc-freeres=no so that glibc's buffers stay live
#    at exit as they do natively): the objects and bytes live at the exit are the same.  The
#    allocation counts are not compared: lighttpd's vary from run to run with how the
#    requests arrive (514, 553, 592 calls in three runs under libchurn, each step 28 more
#    reallocs of its buffers), so only the live set at the exit is the same in two runs.
. test/lib.sh

VERSION=1.4.69-1
for tool in lighttpd valgrind; do
    command -v $tool >/dev/null || fail "$tool is missing (make check installs it)"
done
got=$(dpkg-query -W -f '${Version}' lighttpd 2>/dev/null) || fail "lighttpd is not installed"
[ "$got" = "$VERSION" ] || fail "lighttpd $got: this test was checked against $VERSION"

python3 -c 'import random,sys; r=random.Random(7); sys.stdout.write("".join(r.choice("abcdef0123456789\n") for _ in range(27000)))' >"$WORK/index.html"
{
    echo "server.document-root = \"$WORK\""
    echo "server.port = $port"
    echo "server.bind = \"127.0.0.1\""
    echo "server.errorlog = \"$WORK/error.log\""
    echo "server.pid-file = \"$WORK/lighttpd.pid\""
    echo 'mimetype.assign = (".html" => "text/html")'
} >"$WORK/lighttpd.conf"

# serve NAME PREFIX...: lighttpd under PREFIX, the requests, SIGINT; NAME.* the results
serve() {
    name=$1
    shift
    http_serve "$name" "$WORK/lighttpd.pid" INT "300 3 /nope" "$@" lighttpd -D -f "$WORK/lighttpd.conf"
}

serve_like_native lighttpd '^\[(200, 200), (404, 100)\]'
analyze "$WORK/t1.zst" "$WORK/t1.json"
serve valgrind valgrind --run-libc-freeres=no --run-cxx-freeres=no
cmp -s "$WORK/native.load" "$WORK/valgrind.load" || fail "lighttpd answered differently under valgrind"

check "$WORK/t1.json" "$WORK/valgrind.err" <<'PY'
import re, sys
from churncheck import *
r = load(sys.argv[1])
expect("the trace's exit", field(r, "metadata", "exit", "how"), "normal")
expect("dropped events", field(r, "totals", "dropped_events"), 0)
m = re.search(r"in use at exit: ([\d,]+) bytes in ([\d,]+) blocks", open(sys.argv[2]).read())
if not m:
    fail("no 'in use at exit' line from valgrind")
expect("objects live at exit (valgrind's blocks in use)", field(r, "leaked_at_exit", "count"),
       int(m[2].replace(",", "")))
expect("bytes live at exit (valgrind's)", field(r, "leaked_at_exit", "bytes"), int(m[1].replace(",", "")))
print("allocs %d, live at exit %s (valgrind %s bytes in %s blocks)" % (
    field(r, "totals", "allocs"), field(r, "leaked_at_exit"), m[1], m[2]))
PY
echo "ok: lighttpd $VERSION, 3 runs answer as natively and exit 0; the live set at exit is valgrind's"
