#!/bin/sh
# Words that are true (docs/analyzer.md, Retention): objects still live where the process
# ended are "leaked" only when it ended of its own accord (exit, a return from main, _exit,
# quick_exit); after a signal, caught or not, a detach, or in a trace cut short (killed, or
# still running) they are "live at end" (JSON retention "live").
#  - test/programs/stop_signal.c keeps ten 64-byte records and ends by returning from main
#    (leaked), by SIGTERM's default action, and by SIGTERM caught with sigaction, with an
#    SA_SIGINFO handler and with signal(), after which main returns (live at end each time);
#    under the shim each exits as natively and its handler sees what it installed;
#  - synthetic traces ending in every EXIT kind: normal, _exit and quick_exit leak; signal
#    and detach leave objects live at end, and so does a trace with no EXIT;
#  - redis-server (Debian's 7.0) with three subscribers that stop reading while a client
#    publishes 6,000 messages of 1 KiB, stopped by SIGTERM (redis catches it, then exits 0)
#    while they are still connected: the subscribers' output buffers (megabytes each) are
#    live at end; no function is called leaked.
. test/lib.sh

build_c stop_signal test/programs/stop_signal.c
for mode in exit default sigaction siginfo signal; do
    native=0
    "$WORK/stop_signal" $mode >/dev/null 2>&1 || native=$?
    rm -f "$WORK/$mode.zst"
    status=0
    env CHURN_OUT="$WORK/$mode.zst" LD_PRELOAD="$SHIM" "$WORK/stop_signal" $mode \
        >"$WORK/$mode.out" 2>"$WORK/$mode.err" || status=$?
    [ "$status" = "$native" ] ||
        fail "$mode: exit status $status under the shim, $native natively: $(tail -n 1 "$WORK/$mode.err")"
    analyze "$WORK/$mode.zst" "$WORK/$mode.json"
    "$ANALYZE" "$WORK/$mode.zst" >"$WORK/$mode.txt" 2>&1 || fail "churn-analyze $mode.zst failed"
done

check "$WORK" <<'PY'
import re, sys
from churncheck import *
work = sys.argv[1]
for mode, want in (("exit", "leaked"), ("default", "live"), ("sigaction", "live"),
                   ("siginfo", "live"), ("signal", "live")):
    report = load("%s/%s.json" % (work, mode))
    rows = [f for f in field(report, "functions") if f["function"] == "keep_session"]
    if not rows:
        fail("%s: no function row keep_session" % mode)
    expect("%s: keep_session's retention" % mode, rows[0]["retention"], want)
    expect("%s: keep_session's objects live at the end" % mode, rows[0]["live_count"], 10)
    text = open("%s/%s.txt" % (work, mode)).read()
    line = [l for l in text.splitlines() if "keep_session (stop_signal)" in l and "B/epoch" in l]
    if not line:
        fail("%s: keep_session is not ranked in the text report" % mode)
    if want == "live" and ("leaked" in line[0] or "live at end" not in line[0]):
        fail("%s: keep_session's row does not say 'live at end': %r" % (mode, line[0]))
    if want == "leaked" and "leaked" not in line[0]:
        fail("%s: keep_session's row does not say 'leaked': %r" % (mode, line[0]))
    if want == "live" and re.search(r"\bleaked\b", " ".join(field(report, "verdict", "sentences"))):
        fail("%s: the verdict says leaked: %r" % (mode, report["verdict"]["sentences"]))
print("stop_signal: leaked after returning from main, live at end after SIGTERM (default, "
      "sigaction, SA_SIGINFO, signal)")
PY

# every EXIT kind, on a synthetic trace: 10 epochs of one 64-byte object kept each
for how in 1 2 3 5 7 none; do
    python3 - "$WORK/exit$how.zst" "$how" <<'PY'
import sys
sys.path.insert(0, "test/tools")
import mktrace
out, how = sys.argv[1], sys.argv[2]
recs = mktrace.prelude(0, 0) + [["stack", 7, [0x1010]], ["thread", 1]]
for e in range(10):
    recs += [["epoch", e], ["alloc", 0, 0x100000 + 0x100 * e, 64, 0, 7],
             ["epoch_end", {"epoch": e, "wall_ns": 1000, "rss": 1 << 20,
                            "live_count": e + 1, "live_bytes": 64 * (e + 1)}]]
if how != "none":
    recs.append(["exit", int(how), 15 if how == "3" else 0])
open(out, "wb").write(mktrace.build(
    {"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": 9, "records": recs}]}))
PY
    analyze "$WORK/exit$how.zst" "$WORK/exit$how.json"
done
check "$WORK" <<'PY'
import sys
from churncheck import *
work = sys.argv[1]
for how, want in (("1", "leaked"), ("2", "leaked"), ("5", "leaked"), ("3", "live"),
                  ("7", "live"), ("none", "live")):
    report = load("%s/exit%s.json" % (work, how))
    expect("EXIT %s: the callsite's retention" % how, field(report, "growth")[0]["retention"], want)
print("EXIT normal, _exit, quick_exit: leaked; signal, detach, none: live at end")
PY

# redis pub/sub, stopped by SIGTERM
command -v redis-server >/dev/null || fail "redis-server is missing (Debian redis-server)"
rm -f "$WORK"/redis.*
timeout 120 "$ROOT/build/churn" run -o "$WORK/redis.zst" -- \
    redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" \
    >"$WORK/redis.out" 2>&1 &
cpid=$!
i=0
until redis-cli -p $port ping >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 300 ] || { kill $cpid; fail "redis-server did not start: $(tail -n 1 "$WORK/redis.out")"; }
    sleep 0.1
done
rpid=$(redis-cli -p $port info server | tr -d '\r' | sed -n 's/^process_id://p')
# the subscribers stay connected, not reading, until redis has gone
rm -f "$WORK/ready"
python3 - $port "$WORK/ready" <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
subs = []
for _ in range(3):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(b"SUBSCRIBE news\r\n")
    subs.append(s)
time.sleep(0.3)
pub = socket.create_connection(("127.0.0.1", port))
msg = b"PUBLISH news " + b"x" * 1024 + b"\r\n"
for _ in range(6000):
    pub.sendall(msg)
# every PUBLISH answered: the messages are in the subscribers' buffers by then
got = b""
while got.count(b"\r\n") < 6000:
    got += pub.recv(65536)
open(sys.argv[2], "w").write("ready\n")
time.sleep(60)
PY
clients=$!
i=0
until [ -s "$WORK/ready" ]; do
    i=$((i + 1))
    [ $i -lt 600 ] || { kill $cpid $clients; fail "the pub/sub clients did not finish publishing"; }
    sleep 0.1
done
kill -TERM "$rpid"
status=0
wait $cpid || status=$?
kill $clients 2>/dev/null || true
[ $status -eq 0 ] || fail "redis-server under churn run exited $status after SIGTERM, not 0"
analyze "$WORK/redis.zst" "$WORK/redis.json"
"$ANALYZE" "$WORK/redis.zst" >"$WORK/redis.txt" 2>&1 || fail "churn-analyze redis.zst failed"
check "$WORK/redis.json" "$WORK/redis.txt" <<'PY'
import re, sys
from churncheck import *
report, text = load(sys.argv[1]), open(sys.argv[2]).read()
expect("redis's exit", field(report, "metadata", "exit", "how"), "normal")
leaked = [f["function"] for f in field(report, "functions") if f["retention"] == "leaked"]
if leaked:
    fail("redis stopped by SIGTERM: functions called leaked: %r" % leaked[:5])
live = [f for f in field(report, "functions") if f["retention"] == "live" and f["live_bytes"]]
held = sum(f["live_bytes"] for f in live)
# each subscriber's output buffer holds megabytes of the messages (CLIENT LIST's omem)
if held < 4 * 1024 * 1024:
    fail("redis: only %d bytes live at end in functions; the subscribers' buffers hold more" % held)
if re.search(r"\bleaked\b", text[text.index("Top functions"):text.index("Top callsites")]):
    fail("redis: the text ranking says leaked")
print("redis stopped by SIGTERM: %.1f MiB live at end in %d functions, none leaked"
      % (held / 1048576, len(live)))
PY
echo "ok: leaked after an exit of the program's own, live at end after a signal, a detach or a cut"
