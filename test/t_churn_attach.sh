#!/bin/sh
# churn attach / churn detach on running processes: 20 attach/detach cycles on a busy
# multithreaded C program (test/programs/attach_busy.c: 4 threads malloc/calloc/realloc/
# posix_memalign/aligned_alloc/free, every block's contents checked) and 20 on Debian's
# python3 running a loop, each cycle under a timeout; the programs' output and exit status
# are those of a native run and every trace is complete (EXIT of kind detach) and analyzable.
# Every attach after the first starts the copy of libchurn the first loaded again: one copy
# is mapped after 20 cycles, the busy program's RSS grows by less than 200 KB a cycle after
# the first (each copy kept 4 MB when every attach loaded its own), and no free in any
# cycle's trace is older than that trace.  On one process, attach/detach around commands of
# attach_busy hold: each trace has exactly the commands' allocations and frees, the frees of
# objects the previous trace allocated counted as objects from before the attach, and the
# options of its own attach.
# redis-server (its malloc is libjemalloc.so.2's) takes 5 cycles under redis-benchmark.
# A C++ program that ends while attached keeps its exit status, and its trace ends with it.
# --epoch-signal begins an epoch per signal while attached, and the detach puts the
# program's own disposition of the signal back.
# Growth on a program that leaks exactly 1,000 bytes per epoch (CHURN_EPOCH_AT on its loop's
# function, attached with --epoch-at) is 1,000 B/epoch to 0.5 %, and the 100 frees of objects
# allocated before the attach are counted and named as such.  Refusals, one line and status 1:
# no such process, another user's process, a process another tracer holds, a static
# executable, an --epoch-at function that is not there (and an attach after it works),
# attaching twice, detaching what is not attached; bad usage is status 2.  (That
# kernel.yama.ptrace_scope forbids it cannot be set up safely here: docs/attach.md.)
. test/lib.sh
. test/attach_hold.sh

CHURN=$ROOT/build/churn
[ -x "$CHURN" ] || fail "build/churn is missing: run make"
build_c attach_busy test/programs/attach_busy.c -pthread
build_c attach_tracer test/programs/attach_tracer.c
CYCLES=20
ROUNDS=3

now_ms() {
    date +%s%3N
}

# cycles NAME: CYCLES attach/detach cycles on PID, each step under a timeout, each trace
# checked; the slowest step's time in ms goes to $WORK/NAME.slowest.
cycles() {
    name=$1
    i=0
    slowest=0
    while [ "$i" -lt "$CYCLES" ]; do
        i=$((i + 1))
        t0=$(now_ms)
        status=0
        timeout 60 "$CHURN" attach -o "$WORK/$name.$i.zst" --epoch-ms 50 "$PID" \
            2>"$WORK/$name.$i.attach" || status=$?
        [ "$status" -eq 0 ] || fail "$name: attach $i exited with $status: $(tail -n 1 "$WORK/$name.$i.attach")"
        t1=$(now_ms)
        sleep 0.2
        t2=$(now_ms)
        status=0
        timeout 60 "$CHURN" detach "$PID" 2>"$WORK/$name.$i.detach" || status=$?
        [ "$status" -eq 0 ] || fail "$name: detach $i exited with $status: $(tail -n 1 "$WORK/$name.$i.detach")"
        t3=$(now_ms)
        [ $((t1 - t0)) -le "$slowest" ] || slowest=$((t1 - t0))
        [ $((t3 - t2)) -le "$slowest" ] || slowest=$((t3 - t2))
        grep -q "^churn: attached to $PID " "$WORK/$name.$i.attach" ||
            fail "$name: attach $i did not say so: $(cat "$WORK/$name.$i.attach")"
        if [ "$i" -gt 1 ]; then
            grep -q "libchurn loaded by an earlier attach started again" "$WORK/$name.$i.attach" ||
                fail "$name: attach $i loaded another copy of libchurn: $(cat "$WORK/$name.$i.attach")"
        fi
        awk '/^VmRSS:/ {print $2}' "/proc/$PID/status" >>"$WORK/$name.rss"
        grep -q "^churn: detached from $PID; trace in $WORK/$name.$i.zst" "$WORK/$name.$i.detach" ||
            fail "$name: detach $i did not name the trace: $(cat "$WORK/$name.$i.detach")"
        analyze "$WORK/$name.$i.zst" "$WORK/$name.$i.json"
        check "$WORK/$name.$i.json" "$name cycle $i" <<'EOF'
import sys
from churncheck import load, field, expect, fail
r = load(sys.argv[1])
expect(sys.argv[2] + ": exit", field(r, "metadata", "exit", "how"), "detach")
expect(sys.argv[2] + ": attached", field(r, "metadata", "attached"), True)
if field(r, "totals", "allocs") == 0 or field(r, "totals", "frees") == 0:
    fail(sys.argv[2] + ": nothing traced: %r" % field(r, "totals"))
expect(sys.argv[2] + ": dropped", field(r, "totals", "dropped_events"), 0)
# A free is matched with an allocation of this trace only: none is older than the trace (a
# live map kept from the cycle before would give them the ages of its objects), one epoch
# more for a free that was on its way while the detach ended the last epoch.
span = field(r, "metadata", "last_epoch") - field(r, "metadata", "first_epoch") + 1
for bucket, n in field(r, "lifetime").items():
    low = 0 if bucket == "same" else None if bucket == "never" else int(bucket.split("-")[0].rstrip("+"))
    if n and low is not None and low > span:
        fail("%s: %d frees of age %s epochs, in a trace of %d epochs" % (sys.argv[2], n, bucket, span))
EOF
    done
    echo "$slowest" >"$WORK/$name.slowest"
}

# ---- a busy multithreaded C program ----
t_busy=$(now_ms)
echo go | "$WORK/attach_busy" busy "$ROUNDS" >"$WORK/native.out" ||
    fail "attach_busy busy exited with $? without libchurn"
start busy "$WORK/attach_busy" busy "$ROUNDS"
echo go >&3
sleep 0.5
rss0=$(awk '/^VmRSS:/ {print $2}' "/proc/$PID/status")
cycles busy
rss1=$(awk '/^VmRSS:/ {print $2}' "/proc/$PID/status")
maps1=$(wc -l <"/proc/$PID/maps")
copies=$(awk '$6 ~ /libchurn\.attach\./ {print $6}' "/proc/$PID/maps" | sort -u | wc -l)
# The program's own heap still grows in its first seconds (natively too, 15.5 to 17.9 MB in
# its first 10 s): the growth is counted from the fifth cycle.
rss_first=$(sed -n 5p "$WORK/busy.rss")
finish
[ "$STATUS" -eq 0 ] || fail "attach_busy exited with status $STATUS after $CYCLES attach/detach cycles: $(tail -n 1 "$WORK/busy.err")"
[ "$(tail -n 1 "$WORK/busy.out")" = "$(tail -n 1 "$WORK/native.out")" ] ||
    fail "attach_busy's checksum changed: '$(tail -n 1 "$WORK/busy.out")', natively '$(tail -n 1 "$WORK/native.out")'"
[ ! -s "$WORK/busy.err" ] || fail "attach_busy wrote to stderr: $(head -n 1 "$WORK/busy.err")"
echo "busy: $CYCLES cycles in $(( ($(now_ms) - t_busy) / 1000 )) s, slowest attach or detach $(cat "$WORK/busy.slowest") ms, checksum unchanged; RSS ${rss0} kB before, ${rss_first} kB after the fifth cycle, ${rss1} kB after the last ($(( (rss1 - rss_first) / (CYCLES - 5) )) kB a cycle; after each: $(tr '\n' ' ' <"$WORK/busy.rss")), $maps1 mappings, $copies copy of libchurn"
[ "$copies" -eq 1 ] || fail "busy: $copies copies of libchurn mapped after $CYCLES cycles, expected 1"
[ $((rss1 - rss_first)) -lt $((200 * (CYCLES - 5))) ] ||
    fail "busy: RSS grew from ${rss_first} kB after the fifth cycle to ${rss1} kB after $CYCLES, 200 kB a cycle or more"

# ---- python3 running a loop (a thread waits for the end of stdin) ----
t_python=$(now_ms)
python_loop 3000
python3 "$WORK/loop.py" </dev/null | tail -n 1 >"$WORK/python.native" ||
    fail "python3 loop.py failed without libchurn"
start python python3 "$WORK/loop.py"
cycles python
finish
[ "$STATUS" -eq 0 ] || fail "python3 exited with status $STATUS after $CYCLES attach/detach cycles: $(tail -n 1 "$WORK/python.err")"
[ "$(tail -n 1 "$WORK/python.out")" = "$(cat "$WORK/python.native")" ] ||
    fail "python3's result changed: '$(tail -n 1 "$WORK/python.out")', natively '$(cat "$WORK/python.native")'"
[ ! -s "$WORK/python.err" ] || fail "python3 wrote to stderr: $(head -n 1 "$WORK/python.err")"
echo "python3: $CYCLES cycles in $(( ($(now_ms) - t_python) / 1000 )) s, slowest attach or detach $(cat "$WORK/python.slowest") ms, result unchanged"

# ---- redis-server, whose malloc is libjemalloc.so.2's: 5 cycles under redis-benchmark ----
command -v redis-server >/dev/null || fail "redis-server is missing (Debian redis-server)"
redis-server --port $port --save '' --appendonly no --dir "$WORK" >"$WORK/redis.out" 2>&1 &
rpid=$!
n=0
until redis-cli -p $port ping >/dev/null 2>&1; do
    n=$((n + 1))
    [ $n -lt 100 ] || { kill $rpid; fail "redis-server did not start: $(tail -n 1 "$WORK/redis.out")"; }
    sleep 0.1
done
redis-benchmark -p $port -q -n 200000 -r 5000 -d 256 -t set,get >"$WORK/redis-bench.out" 2>&1 &
bench=$!
PID=$rpid
i=0
while [ "$i" -lt 5 ]; do
    i=$((i + 1))
    timeout 60 "$CHURN" attach -o "$WORK/redis.$i.zst" --epoch-ms 50 "$PID" 2>"$WORK/redis.$i.attach" ||
        { kill $bench $rpid; fail "redis: attach $i: $(tail -n 1 "$WORK/redis.$i.attach")"; }
    sleep 0.3
    timeout 60 "$CHURN" detach "$PID" 2>"$WORK/redis.$i.detach" ||
        { kill $bench $rpid; fail "redis: detach $i: $(tail -n 1 "$WORK/redis.$i.detach")"; }
    [ "$i" -eq 1 ] || grep -q "loaded by an earlier attach started again" "$WORK/redis.$i.attach" ||
        { kill $bench $rpid; fail "redis: attach $i loaded another copy: $(cat "$WORK/redis.$i.attach")"; }
    analyze "$WORK/redis.$i.zst" "$WORK/redis.$i.json"
    check "$WORK/redis.$i.json" "redis cycle $i" <<'EOF'
import sys
from churncheck import load, field, expect, fail
r = load(sys.argv[1])
expect(sys.argv[2] + ": exit", field(r, "metadata", "exit", "how"), "detach")
if not field(r, "metadata", "allocator").startswith("jemalloc"):
    fail(sys.argv[2] + ": allocator %r, expected jemalloc" % field(r, "metadata", "allocator"))
if field(r, "totals", "allocs") == 0:
    fail(sys.argv[2] + ": nothing traced")
EOF
done
wait $bench || { kill $rpid; fail "redis-benchmark failed while attached: $(tail -n 1 "$WORK/redis-bench.out")"; }
[ "$(redis-cli -p $port ping)" = PONG ] || { kill $rpid; fail "redis-server does not answer after 5 cycles"; }
redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true
STATUS=0
wait $rpid || STATUS=$?
[ "$STATUS" -eq 0 ] || fail "redis-server exited with status $STATUS after 5 attach/detach cycles"
echo "redis-server: 5 cycles under redis-benchmark, allocator jemalloc, answers and shuts down cleanly"

# ---- one copy, several traces: exact counts across attaches ----
start hold "$WORK/attach_busy" hold
held hold1 -- "alloc 100"
held hold2 --epoch-signal USR1 -- "free" USR1 "alloc 300"
held hold3 --sample-stacks 4 -- "free" "alloc 40" "free"
held hold4 --events=0 -- "alloc 50" "free" "alloc 20"
# A copy whose last trace did not finish says so and a fresh one is loaded: the copy's state
# is set to that (3) through /proc/PID/mem, as a detach whose writer did not stop leaves it.
state_at=$(nm -D --defined-only "$SHIM" | awk '$3 == "churn_attach_state" {print $1}')
[ -n "$state_at" ] || fail "libchurn.so exports no churn_attach_state"
python3 - "$PID" "$state_at" <<'EOF' || fail "cannot mark the copy as unfinished"
import sys
pid, off = int(sys.argv[1]), int(sys.argv[2], 16)
base = [int(l.split("-")[0], 16) for l in open("/proc/%d/maps" % pid)
        if "/libchurn.attach." in l and l.split()[2] == "00000000"]
assert len(base) == 1, base
with open("/proc/%d/mem" % pid, "r+b", buffering=0) as mem:
    mem.seek(base[0] + off)
    mem.write((3).to_bytes(4, "little"))
EOF
held hold5 -- "alloc 10"
held hold6 -- "free"
copies=$(awk '$6 ~ /libchurn\.attach\./ {print $6}' "/proc/$PID/maps" | sort -u | wc -l)
[ "$copies" -eq 2 ] || fail "hold: $copies copies of libchurn mapped after one that could not start again, expected 2"
[ $(( (0x$(awk '/^SigCgt:/ {print $2}' "/proc/$PID/status") >> 9) & 1 )) -eq 0 ] ||
    fail "SIGUSR1 is still caught after the detach of the second trace of one copy"
finish
[ "$STATUS" -eq 0 ] || fail "attach_busy hold exited with status $STATUS"
for h in hold1 hold5; do
    grep -q "libchurn loaded)" "$WORK/$h.attach" || fail "$h: $(cat "$WORK/$h.attach")"
done
for h in hold2 hold3 hold4 hold6; do
    grep -q "loaded by an earlier attach started again" "$WORK/$h.attach" ||
        fail "$h: a copy of libchurn loaded again: $(cat "$WORK/$h.attach")"
done
check "$WORK/hold1.json" "$WORK/hold2.json" "$WORK/hold3.json" "$WORK/hold4.json" \
    "$WORK/hold5.json" "$WORK/hold6.json" <<'EOF'
import sys
from churncheck import load, field, expect, fail
# allocs, frees of objects of the trace, frees of objects from before it, live at the detach
want = [(100, 0, 0, 100), (300, 0, 100, 300), (40, 40, 300, 0), (70, 50, 0, 20),
        (10, 0, 0, 10), (0, 0, 30, 0)]
first = []
for path, (allocs, frees, unknown, live) in zip(sys.argv[1:], want):
    r = load(path)
    name = path.rsplit("/", 1)[-1]
    got = (field(r, "totals", "allocs"), field(r, "totals", "frees"),
           field(r, "totals", "unknown_frees"), field(r, "leaked_at_exit", "count"))
    expect(name + ": allocs, frees, frees from before the attach, live", got,
           (allocs, frees, unknown, live))
    expect(name + ": exit", field(r, "metadata", "exit", "how"), "detach")
    first.append((field(r, "metadata", "first_epoch"), field(r, "metadata", "last_epoch")))
# one epoch begun by the one signal of hold2's --epoch-signal, none in the others
expect("epochs of each trace", [b - a for a, b in first], [0, 1, 0, 0, 0, 0])
expect("hold5: a fresh copy's first epoch", first[4][0], 0)
expect("hold3: its own --sample-stacks", field(load(sys.argv[3]), "metadata", "stack_sample"), 4)
expect("hold2: the default stack sampling", field(load(sys.argv[2]), "metadata", "stack_sample"), 1)
expect("hold4: --events=0", field(load(sys.argv[4]), "metadata", "events"), False)
# each trace of one copy starts after the one before it (hold5 is another copy's first)
for i, j in ((0, 1), (1, 2), (2, 3), (4, 5)):
    (a, b), (c, d) = first[i], first[j]
    if c <= b:
        fail("a trace starts at epoch %d, the one before ended at %d" % (c, b))
print("hold: 6 traces of two copies, exact counts, epochs %r" % first)
EOF

# ---- growth at a known rate: 1,000 bytes leaked per call of tick() ----
start leak "$WORK/attach_busy" leak 20 60
timeout 60 "$CHURN" attach -o "$WORK/leak.zst" --epoch-at tick "$PID" 2>"$WORK/leak.attach" ||
    fail "attach to the leaking program: $(tail -n 1 "$WORK/leak.attach")"
echo go >&3
n=0
while ! grep -q '^done$' "$WORK/leak.out"; do
    n=$((n + 1))
    [ "$n" -lt 600 ] || fail "the leaking program did not finish"
    sleep 0.05
done
timeout 60 "$CHURN" detach "$PID" 2>"$WORK/leak.detach" ||
    fail "detach from the leaking program: $(tail -n 1 "$WORK/leak.detach")"
finish
[ "$STATUS" -eq 0 ] || fail "the leaking program exited with status $STATUS"
analyze "$WORK/leak.zst" "$WORK/leak.json"
"$ANALYZE" "$WORK/leak.zst" >"$WORK/leak.txt" 2>&1 || fail "churn-analyze on the leak's trace failed"
grep -q ", 100 frees of objects allocated before the attach," "$WORK/leak.txt" ||
    fail "the report does not name the 100 frees before the attach: $(grep '^Totals' "$WORK/leak.txt")"
grep -q "unknown free" "$WORK/leak.txt" && fail "the report calls frees after an attach unknown"
check "$WORK/leak.json" <<'EOF'
import sys
from churncheck import load, field, expect, fail
r = load(sys.argv[1])
expect("frees of objects from before the attach", field(r, "totals", "unknown_frees"), 100)
rows = [g for g in field(r, "growth") if any("attach_busy.c" in f for f in g["stack"])]
if not rows:
    fail("no growth row for the leak: %r" % field(r, "growth")[:2])
g = rows[0]
for key, want in (("bytes_per_epoch", 1000.0), ("count_per_epoch", 10.0)):
    if abs(g[key] - want) > want * 0.005:
        fail("growth %s %.3f, expected %.0f within 0.5 %%" % (key, g[key], want))
expect("live objects leaked", g["live_count"], 600)
print("leak: %.1f B/epoch, %.2f objects/epoch, r2 %.4f" % (g["bytes_per_epoch"], g["count_per_epoch"], g["r2"]))
EOF

# ---- a C++ program that ends while attached: its trace ends with its exit ----
build_cxx attach_cxx test/programs/attach_cxx.cc
start cxx "$WORK/attach_cxx"
timeout 60 "$CHURN" attach -o "$WORK/cxx.zst" "$PID" 2>"$WORK/cxx.attach" ||
    fail "attach to the C++ program: $(tail -n 1 "$WORK/cxx.attach")"
echo go >&3
finish
[ "$STATUS" -eq 7 ] || fail "the C++ program exited with status $STATUS while attached, natively 7"
[ "$(tail -n 1 "$WORK/cxx.out")" = "kept 200" ] || fail "the C++ program printed $(tail -n 1 "$WORK/cxx.out")"
analyze "$WORK/cxx.zst" "$WORK/cxx.json"
check "$WORK/cxx.json" <<'EOF'
import sys
from churncheck import load, field, expect, fail
r = load(sys.argv[1])
expect("exit of the C++ program", field(r, "metadata", "exit"), {"how": "normal", "detail": 7})
# 200 strings, 200 arrays and the vector's one block at the least
if field(r, "totals", "allocs") < 401 or field(r, "totals", "frees") < 200:
    fail("the C++ program's allocations are not all there: %r" % field(r, "totals"))
expect("frees before the attach", field(r, "totals", "unknown_frees"), 0)
EOF

# ---- --epoch-signal: epochs on the signal while attached, the old disposition after ----
start sig "$WORK/attach_busy" leak 1 1
caught() { # 1 when the process catches SIGUSR1 (bit 10 of SigCgt)
    echo $(( (0x$(awk '/^SigCgt:/ {print $2}' "/proc/$PID/status") >> 9) & 1 ))
}
[ "$(caught)" -eq 0 ] || fail "the program catches SIGUSR1 before the attach"
timeout 60 "$CHURN" attach -o "$WORK/sig.zst" --epoch-signal USR1 "$PID" 2>"$WORK/sig.attach" ||
    fail "attach --epoch-signal USR1: $(tail -n 1 "$WORK/sig.attach")"
[ "$(caught)" -eq 1 ] || fail "SIGUSR1 is not caught while attached with --epoch-signal USR1"
pending() { # 1 while a SIGUSR1 sent to the process waits to be delivered (bit 10 of ShdPnd)
    echo $(( (0x$(awk '/^ShdPnd:/ {print $2}' "/proc/$PID/status") >> 9) & 1 ))
}
# Each signal once the one before was delivered: two pending at once merge into one epoch
# (a fixed pause would leave that to how soon a loaded machine runs the program).
for n in 1 2 3 4 5; do
    kill -USR1 "$PID"
    tries=0
    while [ "$(pending)" -eq 1 ]; do
        tries=$((tries + 1))
        [ "$tries" -lt 600 ] || fail "SIGUSR1 $n was not delivered to the attached program in 30 s"
        sleep 0.05
    done
done
timeout 60 "$CHURN" detach "$PID" 2>"$WORK/sig.detach" ||
    fail "detach after --epoch-signal: $(tail -n 1 "$WORK/sig.detach")"
[ "$(caught)" -eq 0 ] || fail "SIGUSR1 is still caught after the detach: the program's disposition was not put back"
echo go >&3
finish
[ "$STATUS" -eq 0 ] || fail "the program signalled while attached exited with status $STATUS"
analyze "$WORK/sig.zst" "$WORK/sig.json"
check "$WORK/sig.json" <<'EOF'
import sys
from churncheck import load, field, expect
r = load(sys.argv[1])
# epoch 0 from the attach, then one per signal: 0..5
expect("epochs begun by 5 signals", field(r, "metadata", "last_epoch") - field(r, "metadata", "first_epoch"), 5)
EOF

# ---- --for: detached by itself ----
start timed "$WORK/attach_busy" busy 1
echo go >&3
timeout 60 "$CHURN" attach --for 1 -o "$WORK/timed.zst" "$PID" 2>"$WORK/timed.attach" ||
    fail "attach --for 1: $(tail -n 1 "$WORK/timed.attach")"
grep -q "^churn: detached from $PID" "$WORK/timed.attach" || fail "attach --for 1 did not detach"
analyze "$WORK/timed.zst" "$WORK/timed.json"

# ---- refusals: one line, status 1, the process untouched ----
refused() { # refused WHAT PATTERN ARGS...
    what=$1
    pattern=$2
    shift 2
    status=0
    timeout 60 "$CHURN" "$@" >"$WORK/refused.out" 2>"$WORK/refused.err" || status=$?
    [ "$status" -eq 1 ] || fail "$what: status $status, expected 1: $(cat "$WORK/refused.err")"
    [ "$(wc -l <"$WORK/refused.err")" -eq 1 ] || fail "$what: not one line: $(cat "$WORK/refused.err")"
    grep -q "$pattern" "$WORK/refused.err" || fail "$what: $(cat "$WORK/refused.err")"
}
refused "a function --epoch-at cannot find" "could not start in $PID: CHURN_EPOCH_AT: no function \"no_such_function\"" \
    attach --epoch-at no_such_function -o "$WORK/nofn.zst" "$PID"
[ ! -e "$WORK/nofn.zst" ] || fail "an attach that could not start left a trace"
timeout 60 "$CHURN" attach -o "$WORK/twice.zst" "$PID" 2>/dev/null || fail "attach for the twice case (after one that could not start)"
refused "attaching twice" "attached to it already" attach "$PID"
timeout 60 "$CHURN" detach "$PID" 2>/dev/null || fail "detach for the twice case"
refused "detaching what is not attached" "is not attached" detach "$PID"
finish
[ "$STATUS" -eq 0 ] || fail "the program attached with --for exited with status $STATUS"

sh -c 'exit 0' &
dead=$!
wait "$dead"
refused "no such process" "cannot attach to $dead: no such process" attach "$dead"
refused "no such process (detach)" "no such process" detach "$dead"

start traced "$WORK/attach_busy" leak 1 1
rm -f "$WORK/tracer.in"
mkfifo "$WORK/tracer.in"
"$WORK/attach_tracer" "$PID" <"$WORK/tracer.in" >"$WORK/tracer.out" 2>&1 &
tracer=$!
exec 4>"$WORK/tracer.in"
n=0
while ! grep -q tracing "$WORK/tracer.out"; do
    n=$((n + 1))
    [ "$n" -lt 200 ] || fail "the tracer did not start: $(cat "$WORK/tracer.out")"
    sleep 0.05
done
refused "a process another tracer holds" "traced by process $tracer (attach_tracer)" attach "$PID"
exec 4>&-
wait "$tracer" || fail "the tracer failed: $(cat "$WORK/tracer.out")"
echo go >&3
finish
[ "$STATUS" -eq 0 ] || fail "the traced program exited with status $STATUS"

# another user's process: churn run as nobody against this test's own (as root only, which
# may change user; as another user the case is the same with the roles swapped)
if [ "$(id -u)" -eq 0 ]; then
    start owned "$WORK/attach_busy" leak 1 1
    status=0
    setpriv --reuid=65534 --regid=65534 --clear-groups "$CHURN" attach "$PID" \
        >"$WORK/refused.out" 2>"$WORK/refused.err" || status=$?
    [ "$status" -eq 1 ] || fail "another user's process: status $status: $(cat "$WORK/refused.err")"
    grep -q "cannot attach to $PID: it belongs to another user" "$WORK/refused.err" ||
        fail "another user's process: $(cat "$WORK/refused.err")"
    echo go >&3
    finish
    [ "$STATUS" -eq 0 ] || fail "the program of another user exited with status $STATUS"
fi

build_c attach_static test/programs/attach_busy.c -pthread -static
start static "$WORK/attach_static" leak 1 1
refused "a static executable" "a static or non-glibc program" attach "$PID"
echo go >&3
finish
[ "$STATUS" -eq 0 ] || fail "the static program exited with status $STATUS"

for args in "attach" "attach x" "attach 1 2" "attach --for 0 1" "attach --epoch-ms x 1" \
    "attach --nope 1" "detach" "detach x"; do
    status=0
    # shellcheck disable=SC2086
    "$CHURN" $args >/dev/null 2>"$WORK/usage.err" || status=$?
    [ "$status" -eq 2 ] || fail "churn $args: status $status, expected 2"
    [ "$(wc -l <"$WORK/usage.err")" -eq 1 ] || fail "churn $args: not one line: $(cat "$WORK/usage.err")"
done
echo "attach/detach: cycles, growth, refusals and usage as expected"
