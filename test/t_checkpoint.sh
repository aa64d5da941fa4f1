#!/bin/sh
# A process that ends without an exit libchurn sees, an exit_group system call made inline or
# a kill -9, loses only what came after the trace's last checkpoint (docs/design.md,
# "Endings"), with the default options: test/programs/steady_end.c makes one malloc and free a
# microsecond for 2.5 s in steady_loop and counts them in a shared mapping, which a kill -9
# leaves behind.  The trace holds every one of them up to at most LOST_MS before the end (the
# design's bound is 60 ms with the writer keeping up; a trace without checkpoints loses up to
# CHURN_FLUSH_MS, 1 s: about 500 ms of this run), never more than the program made.  A loaded
# machine gets more room: with both cores busy, at most 10 ms were lost and the checkpoint was
# at most 27 ms before churn run saw the end in 9 runs; with the test at nice 19, 31 ms lost
# and a checkpoint 199 ms before the end.  The report says the trace ends at a checkpoint, and `churn run`
# says how long before the end it was.  In a ring that wraps the checkpoints stay within
# CHURN_RING_MB.  A damaged open segment is reported, not read.
. test/lib.sh

LOST_MS=300
build_c steady_end test/programs/steady_end.c
for mode in asm kill; do
    trace=$WORK/$mode.zst
    status=0
    if [ $mode = asm ]; then
        timeout -k 2 30 env CHURN_OUT="$trace" LD_PRELOAD="$SHIM" \
            "$WORK/steady_end" asm 2500 "$WORK/$mode.count" 2>"$WORK/$mode.err" || status=$?
        [ "$status" -eq 0 ] || fail "steady_end asm exited with status $status: $(cat "$WORK/$mode.err")"
    else
        env CHURN_OUT="$trace" LD_PRELOAD="$SHIM" \
            "$WORK/steady_end" kill 0 "$WORK/$mode.count" 2>"$WORK/$mode.err" &
        pid=$!
        sleep 2.5
        kill -9 $pid
        wait $pid || status=$?
        [ "$status" -eq 137 ] || fail "steady_end kill ended with status $status, not SIGKILL's 137"
    fi
    analyze "$trace" "$WORK/$mode.json"
    check "$WORK/$mode.json" "$WORK/$mode.count" $mode $LOST_MS <<'PY'
import struct, sys
from churncheck import *
report, mode, bound = load(sys.argv[1]), sys.argv[3], float(sys.argv[4])
made, first_ns, last_ns = struct.unpack("<3Q", open(sys.argv[2], "rb").read(24))
rows = [g for g in field(report, "growth") if any("steady_loop" in f for f in g["stack"][:2])]
allocs, frees = sum(g["allocs"] for g in rows), sum(g["frees"] for g in rows)
# the program counts a pair after its free: a kill between the malloc and that count leaves
# one pair traced that the count does not hold yet
if not made or allocs > made + 1 or frees > allocs:
    fail("%s: %d allocations and %d frees traced of the %d made" % (mode, allocs, frees, made))
per_ms = made / ((last_ns - first_ns) / 1e6)
lost_ms = (made - allocs) / per_ms
if lost_ms > bound:
    fail("%s: %d of the %d allocations traced: the last %.0f ms are lost (at most %.0f allowed)"
         % (mode, allocs, made, lost_ms, bound))
meta = field(report, "metadata")
if meta["exit"]["how"] != "none" or not meta.get("checkpoint"):
    fail("%s: metadata says exit %r, checkpoint %r; want none, and the checkpoint the trace ends at"
         % (mode, meta["exit"], meta.get("checkpoint")))
said = [w for w in field(report, "warnings") if w.startswith("no exit record")]
if not said or "up to its last checkpoint" not in said[0] or "SIGKILL" not in said[0]:
    fail("%s: the report does not say the trace holds everything up to its last checkpoint: %r"
         % (mode, field(report, "warnings")))
print("%s: %d of %d allocations traced, %.1f ms lost (an estimate: %d allocations at %.0f a ms); "
      "the trace ends at its checkpoint at %.3f s" % (mode, allocs, made, lost_ms, made - allocs,
                                                      per_ms, meta["checkpoint"]["s"]))
PY
    # The epoch the kill cut has no summary: the text report shows no RSS and no length for it
    # (a 0 there would read as measured).
    "$ANALYZE" "$trace" >"$WORK/$mode.txt" 2>&1 || fail "churn-analyze $mode.zst failed"
    row=$(sed -n '/^Epochs (/{n;n;p;}' "$WORK/$mode.txt")
    set -- $row
    [ "$#" -eq 9 ] && [ "$8" = - ] && [ "$9" = - ] ||
        fail "$mode: the cut epoch's row does not show '-' for its RSS and length: $row"
done

# In a ring that wraps (1 MiB of 64 KiB segments, python3 with every object through malloc,
# killed once the live file shows the ring wrapped), the checkpoints stay inside the ring: the
# file is never larger, and the trace ends at its open segment's checkpoint.  Segments close
# about every 10 ms here, and a kill that lands after a close and before the new segment's
# first checkpoint (the writer's next pass) leaves a trace ending at the closed segment,
# which the report must say; 6 of 52 kills landed there with both cores busy, so up to 5
# runs are made for one that ends at a checkpoint.  Python's frames stay off
# (CHURN_RUNTIME_FRAMES=0): with them every pass of the writer carries more than 64 KiB of
# stacks and their names, so each pass closes its segment and none takes a checkpoint (8 of
# 8 kills); what is checked here is the ring's checkpoints, not python's names.
ring_run() {
    rm -f "$WORK/ring.zst"
    env CHURN_RUNTIME_FRAMES=0 PYTHONMALLOC=malloc PYTHONHASHSEED=0 CHURN_RING_MB=1 \
        CHURN_SEGMENT_KB=64 \
        CHURN_OUT="$WORK/ring.zst" LD_PRELOAD="$SHIM" \
        /usr/bin/python3 bench/python_churn.py 100000000 >/dev/null 2>"$WORK/ring.err" &
    pid=$!
    tries=0
    until "$ANALYZE" --json "$WORK/ring.zst" >"$WORK/ring.live.json" 2>/dev/null &&
        check "$WORK/ring.live.json" >/dev/null 2>&1 <<'PY'
import sys
from churncheck import *
sys.exit(0 if field(load(sys.argv[1]), "metadata", "segments_dropped") else 1)
PY
    do
        tries=$((tries + 1))
        [ "$tries" -lt 300 ] && kill -0 $pid 2>/dev/null ||
            { kill -9 $pid 2>/dev/null; fail "python3 never wrapped the 1 MiB ring: $(tail -n 1 "$WORK/ring.err")"; }
        sleep 0.1
    done
    kill -9 $pid
    wait $pid || true
    size=$(stat -c %s "$WORK/ring.zst")
    [ "$size" -le 1048576 ] || fail "the ring file is $size bytes, past CHURN_RING_MB=1"
    analyze "$WORK/ring.zst" "$WORK/ring.json"
    ring_status=0
    check "$WORK/ring.json" <<'PY' || ring_status=$?
import sys
from churncheck import *
r = load(sys.argv[1])
meta = field(r, "metadata")
if not meta["segments_dropped"]:
    fail("python3 killed in a 1 MiB ring after it wrapped: no segment overwritten")
if meta.get("checkpoint"):
    print("ring: %d segments overwritten, %d used, the trace ends at its checkpoint at %.3f s"
          % (meta["segments_dropped"], meta["segments_used"], meta["checkpoint"]["s"]))
    sys.exit(0)
if not any("holds everything up to the close of its last segment" in w for w in field(r, "warnings")):
    fail("python3 killed in a 1 MiB ring: no checkpoint, and the report does not say the trace "
         "ends at its last segment's close: %r" % field(r, "warnings"))
print("ring: killed between a segment's close and the next one's first checkpoint")
sys.exit(3)
PY
    [ $ring_status -eq 0 ] || [ $ring_status -eq 3 ] || exit 1
}
run=1
ring_run
while [ $ring_status -eq 3 ]; do
    [ $run -lt 5 ] || fail "python3 killed in a 1 MiB ring 5 times: no trace ended at a checkpoint"
    run=$((run + 1))
    ring_run
done

# A damaged open segment is reported, never read as the trace's end: its header counting
# more records than its blocks hold, or fewer, its frame cut inside its last block (each with
# checksums made right again), or a byte of it flipped.
check "$WORK/asm.zst" "$WORK" <<'PY'
import re, struct, sys, zlib
from churncheck import *
data = open(sys.argv[1], "rb").read()
# "CHSO", or (format 8) "CHSo" when the open segment is a delta one
open_header = re.search(re.escape(struct.pack("<II", 0x184D2A5C, 48)) + b"CHS[Oo]", data)
at = open_header.start() if open_header else -1
if at < 0:
    fail("asm.zst has no open segment header")
fields = list(struct.unpack_from("<IIIIQQQIIII", data, at))
RAW, ZBYTES, PCRC, HCRC = 7, 8, 9, 10

def write(name, fields, payload_fix=True):
    out = bytearray(data)
    if payload_fix:
        fields[PCRC] = zlib.crc32(out[at + 56:at + 56 + fields[ZBYTES]])
    fields[HCRC] = 0
    fields[HCRC] = zlib.crc32(struct.pack("<IIIIQQQIIII", *fields))
    struct.pack_into("<IIIIQQQIIII", out, at, *fields)
    open("%s/damaged_%s.zst" % (sys.argv[2], name), "wb").write(out)

for name, field_, delta in (("more", RAW, 1), ("fewer", RAW, -1), ("cut", ZBYTES, -2)):
    f = list(fields)
    f[field_] += delta
    write(name, f)
flipped = bytearray(data)
flipped[at + 56 + fields[ZBYTES] // 2] ^= 0x40
open("%s/damaged_flip.zst" % sys.argv[2], "wb").write(flipped)
PY
for name in more fewer cut flip; do
    analyze "$WORK/damaged_$name.zst" "$WORK/damaged_$name.json"
    check "$WORK/damaged_$name.json" $name <<'PY'
import sys
from churncheck import *
report, name = load(sys.argv[1]), sys.argv[2]
warnings = field(report, "warnings")
said = [w for w in warnings if "open segment damaged" in w]
meta = field(report, "metadata")
if name == "flip":
    said = [w for w in warnings if "damaged segment" in w] if meta["segments_damaged"] else []
if not said:
    fail("%s: the damaged open segment is not reported: %r" % (name, warnings))
if meta.get("checkpoint") or any("up to its last checkpoint" in w for w in warnings):
    fail("%s: the report says the trace ends at a checkpoint it could not read: %r, %r"
         % (name, meta.get("checkpoint"), warnings))
print("%s: reported: %s" % (name, said[0][:90]))
PY
done

# churn run says how long before the end the checkpoint was: measured by the parent, an exact
# bound on what the trace lacks.  The run lasts 1.5 s, halfway between two of the segment
# closes CHURN_FLUSH_MS makes: a run of 1 s ended right after the first close, before the new
# segment's first checkpoint, one time in 30.
CHURN=$ROOT/build/churn
status=0
timeout -k 2 30 "$CHURN" run -o "$WORK/run.zst" "$WORK/steady_end" asm 1500 "$WORK/run.count" \
    >/dev/null 2>"$WORK/run.err" || status=$?
[ "$status" -eq 0 ] || fail "churn run steady_end asm: status $status: $(cat "$WORK/run.err")"
ms=$(sed -n 's/.*inline, which libchurn cannot see: the trace has no exit record; it holds everything up to its last checkpoint, \([0-9.]*\) ms before the process ended.*/\1/p' "$WORK/run.err")
[ -n "$ms" ] || fail "churn run does not say how long before the end the last checkpoint was: $(cat "$WORK/run.err")"
awk -v ms="$ms" -v bound=$LOST_MS 'BEGIN { exit !(ms <= bound) }' ||
    fail "churn run: the last checkpoint was $ms ms before the end, more than $LOST_MS"
echo "churn run: the last checkpoint $ms ms before the inline exit_group"
