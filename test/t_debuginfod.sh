#!/bin/sh
# Debug info as gdb finds it.  With DEBUGINFOD_URLS set, a module without a local debug file
# gets one from debuginfod: Debian's debuginfod server, started here on loopback over a
# directory holding the debug file of a stripped program (test/programs/leak_fix.c), names
# its functions with file:line, and the report says the debug file came from there.  A
# program the server has no debug file for, and a server that is not there, are said in one
# warning each, and the report is written.  Without a debug file anywhere, a module of a
# Debian package (sqlite3 and its libsqlite3.so.0) is given the -dbgsym package that would
# carry it, in one line of the text report and in the JSON.
. test/lib.sh

command -v debuginfod >/dev/null || fail "debuginfod is missing (Debian debuginfod; make check installs it)"
command -v sqlite3 >/dev/null || fail "sqlite3 is missing (Debian sqlite3)"

# served and unserved: one build with its debug file on the server, one without
mkdir -p "$WORK/srv" "$WORK/other"
build_c leak_fix test/programs/leak_fix.c
build_c other/leak_fix test/programs/leak_fix.c -DFIXED
for p in leak_fix other/leak_fix; do
    objcopy --only-keep-debug "$WORK/$p" "$WORK/$p.debug" && strip --strip-all "$WORK/$p" ||
        fail "cannot strip $p"
done
mv "$WORK/leak_fix.debug" "$WORK/srv/"
rm "$WORK/other/leak_fix.debug"
traced "$WORK/served.zst" "$WORK/served.out" "$WORK/leak_fix"
traced "$WORK/unserved.zst" "$WORK/unserved.out" "$WORK/other/leak_fix"

debuginfod -F -p "$port" -d "$WORK/db.sqlite" -t 0 -g 0 "$WORK/srv" >"$WORK/server.log" 2>&1 &
server=$!
trap 'kill ${server:-} 2>/dev/null' EXIT
python3 - "$port" <<'PY' || fail "debuginfod did not scan $WORK/srv: $(tail -n 2 "$WORK/server.log")"
import re, sys, time, urllib.request
for _ in range(300):
    try:
        m = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read()
        if re.search(rb'scanned_files_total\{source="file"\} [1-9]', m) and \
                re.search(rb'thread_work_pending\{role="scan"\} 0', m):
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.1)
sys.exit(1)
PY
URL=http://127.0.0.1:$port
export DEBUGINFOD_CACHE_PATH="$WORK/debuginfod-cache"
DEBUGINFOD_URLS=$URL analyze "$WORK/served.zst" "$WORK/served.json"
DEBUGINFOD_URLS=$URL analyze "$WORK/unserved.zst" "$WORK/unserved.json"
kill $server
wait $server 2>/dev/null || true
trap - EXIT
# nothing listens there now (a cache of its own: the one above remembers that the server had
# no such file)
DEBUGINFOD_CACHE_PATH="$WORK/debuginfod-cache2" DEBUGINFOD_URLS=$URL \
    analyze "$WORK/unserved.zst" "$WORK/refused.json"

timeout 60 "$ROOT/build/churn" run -o "$WORK/sqlite.zst" -- sqlite3 :memory: \
    "CREATE TABLE t(a); INSERT INTO t VALUES (1); SELECT * FROM t;" >"$WORK/sqlite.out" 2>"$WORK/sqlite.err" ||
    fail "sqlite3 under churn run failed: $(tail -n 1 "$WORK/sqlite.err")"
env -u DEBUGINFOD_URLS "$ANALYZE" "$WORK/sqlite.zst" >"$WORK/sqlite.txt" 2>"$WORK/sqlite.txt.err" ||
    fail "churn-analyze on sqlite3's trace failed: $(tail -n 1 "$WORK/sqlite.txt.err")"
env -u DEBUGINFOD_URLS "$ANALYZE" --json "$WORK/sqlite.zst" >"$WORK/sqlite.json" 2>"$WORK/sqlite.json.err" ||
    fail "churn-analyze --json on sqlite3's trace failed: $(tail -n 1 "$WORK/sqlite.json.err")"

check "$WORK" "$URL" <<'PY'
import os, re, sys
from churncheck import *
work, url = sys.argv[1:]

def debug_info(report, module):
    rows = [m for m in field(report, "debug_info") if m["module"] == module]
    if len(rows) != 1:
        fail("debug_info has %d rows for %s: %s" % (len(rows), module, field(report, "debug_info")))
    return rows[0]

served = load(os.path.join(work, "served.json"))
exe = os.path.join(work, "leak_fix")
row = debug_info(served, exe)
expect("served: where its debug file came from", row["from"], "debuginfod " + url)
if not row["debug_file"] or not os.path.isfile(row["debug_file"]):
    fail("served: debug file %r" % row["debug_file"])
stacks = [g["stack"] for g in growth_with(served, "remember")]
if not stacks or not re.match(r"remember \(.*test/programs/leak_fix\.c:\d+\)$", stacks[0][0]):
    fail("served: remember without file:line from debuginfod's debug file: %s" % stacks[:1])

def said(report, what, pattern):
    if not any(re.search(pattern, w) for w in field(report, "warnings")):
        fail("%s: no warning matching %r in %s" % (what, pattern, field(report, "warnings")))

unserved = load(os.path.join(work, "unserved.json"))
other = os.path.join(work, "other", "leak_fix")
expect("unserved: debug file", debug_info(unserved, other)["from"], None)
said(unserved, "unserved", re.escape("module %s: no debug info" % other) +
     r".*debuginfod at " + re.escape(url) + r" has none")
refused = load(os.path.join(work, "refused.json"))
said(refused, "no server", re.escape("module %s: no debug info" % other) +
     r".*debuginfod at " + re.escape(url) + r" could not be asked: ")

sq = load(os.path.join(work, "sqlite.json"))
lib = [m for m in field(sq, "debug_info") if m["module"].endswith("/libsqlite3.so.0")]
if len(lib) != 1:
    fail("sqlite3: no debug_info row for libsqlite3.so.0: %s" % field(sq, "debug_info"))
expect("libsqlite3.so.0's package", lib[0]["package"], "libsqlite3-0")
expect("libsqlite3.so.0's debug package", lib[0]["dbgsym"], "libsqlite3-0-dbgsym")
exe = [m for m in field(sq, "debug_info") if m["module"] == "/usr/bin/sqlite3"]
if len(exe) != 1 or exe[0]["dbgsym"] != "sqlite3-dbgsym":
    fail("sqlite3: the executable's debug package: %s" % exe)
text = open(os.path.join(work, "sqlite.txt")).read()
# one warning names them all; the verdict's next step names those of the functions it shows
# by offset
lines = [l for l in text[text.index("\nWarnings:"):].splitlines() if "dbgsym" in l]
if len(lines) != 1 or "libsqlite3-0-dbgsym" not in lines[0] or "sqlite3-dbgsym" not in lines[0]:
    fail("sqlite3: the text report's warnings naming debug packages: %s" % lines)
steps = [l for l in text[:text.index("\nWarnings:")].splitlines() if "dbgsym" in l]
if any(not l.strip().startswith("Next: debug files") for l in steps):
    fail("sqlite3: debug packages named outside the warnings and the verdict's step: %s" % steps)
print("debuginfod on loopback names a stripped program's frames; no file there, no server: "
      "said; sqlite3: %s" % lines[0].strip())
PY
