#!/bin/sh
# Small crafted traces that make a plain reading of them explode in memory or time: each must
# be read within a bound (a memory limit or a time limit), with the figures or the warning it
# is owed (docs/reliability.md, the analyzer's crafted-input rows).
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh
T=$WORK

python3 - "$T" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
from mktrace import varint, zigzag
T = sys.argv[1]

def write(name, body, nseg=1):
    head = mktrace.Encoder(3)
    for r in mktrace.prelude(0, 0):
        head.record(r)
    desc = {"segments": [{"seq": 0, "records": [["raw", (bytes(head.out) + body).hex()]]}]}
    open(os.path.join(T, name), "wb").write(mktrace.build(desc))

# 1 M stacks of 256 frames, each sharing 255 with the one before: 2 KiB of frames from
# each 8-byte record (2 GB copied out)
body = bytearray([0x03]) + varint(1) + varint(256) + varint(0) + varint(0)
body += varint(zigzag(0x401000)) + b"\x02" * 255
for i in range(2, 1_000_001):
    body += bytes([0x03]) + varint(i) + varint(256) + varint(0) + varint(i - 1) + varint(255)
    body += varint(zigzag(0x400000 + 16 * i))
body += bytes([0x04, 1, 0x05, 0, 0x0A, 32, 0, 7, 0x10, 0]) + varint(1036 + zigzag(0x5000000))
write("stacks.trace", bytes(body))

# 200 k modules, each with its own range (checked one by one against all the others, they
# cost their square)
body = bytearray()
for i in range(200_000):
    start = 0x10000000 + i * 0x1000
    body += bytes([0x02]) + varint(i) + varint(start) + varint(start) + varint(start + 0x1000)
    body += varint(0) + varint(0) + varint(2) + b"/x"
write("modules.trace", bytes(body))

# 1 M frees of one address that was never allocated (each placed behind all the others,
# they cost their square)
body = bytearray([0x04, 1, 0x05, 0, 0x20]) + varint(zigzag(0x7000000)) + bytes([32, 0, 0, 0])
body += bytes([0x20, 0, 32, 0, 0, 0]) * 999_999
write("frees.trace", bytes(body))

# 200 k epochs counting down, one free each (each row inserted in front of the others, they
# cost their square), read with one row per epoch (--all-epochs) and merged into buckets
body = bytearray([0x04, 1, 0x05]) + varint(200_000) + bytes([0x20])
body += varint(zigzag(0x7000000)) + bytes([32, 0, 0, 0])
for e in range(199_999, 0, -1):
    body += bytes([0x05]) + varint(e) + bytes([0x20, 0, 32, 0, 0, 0])
write("epochs.trace", bytes(body))
write("epochs_merged.trace", bytes(body))

# 60 k segment headers 64 bytes apart after a good segment, each claiming a payload that
# runs to the end of the file (each payload checksummed, they cost the file's size squared)
import struct, zlib
good = mktrace.build({"segments": [{"seq": 0, "records": mktrace.prelude(0, 0) + [["exit", 1, 0]]}]})
n, stride = 60_000, 64
total = len(good) + n * stride
heads = bytearray()
for i in range(n):
    off = len(good) + i * stride
    f = [0x184D2A5C, 48, 0x47534843, 3, 1000 + i, 0, 0, 100, total - off - 56, 0, 0]
    f[-1] = zlib.crc32(mktrace.SEGMENT_HEADER.pack(*f)) & 0xFFFFFFFF
    heads += mktrace.SEGMENT_HEADER.pack(*f) + struct.pack("<I", 0xFD2FB528) + bytes(stride - 60)
open(os.path.join(T, "headers.trace"), "wb").write(good + bytes(heads))

# a segment of 4 M allocations still live, then 3,000 short segments each leaving one
# allocation live past the decoder's 16,384 recent ones (the table of such allocations,
# grown for the first segment, cleared whole at the start of every later one costs its size
# each time)
def segment(seq, body):
    head = mktrace.Encoder(3)
    for r in mktrace.prelude(seq, 0):
        head.record(r)
    return {"seq": seq, "records": [["raw", (bytes(head.out) + body).hex()]]}
first = bytes([0x04, 1, 0x05, 0, 0x0A, 32, 0, 0, 0x10, 0]) + varint(1036 + zigzag(0x10000000))
segs = [segment(0, first + (bytes([0x10, 0]) + varint(1028)) * (4_000_000 - 1))]
for i in range(1, 3001):
    body = bytes([0x04, 1, 0x05, 0, 0x0A, 32, 0, 0, 0x10, 0])
    body += varint(1036 + zigzag(0x40000000 + i * 0x100000))   # kept live
    body += bytes([0x10, 0]) + varint(1028) + bytes([0x60, 1])  # then 16,384 freed at once
    body += bytes([0x10, 0, 0, 0x60, 1]) * 16383
    segs.append(segment(i, body))
open(os.path.join(T, "spilled.trace"), "wb").write(mktrace.build({"segments": segs}))

# 1 M mmaps of 4 KiB, each 8 KiB below the one before, as mmap hands out addresses (kept in
# a sorted array, each one inserted in front of the others, they cost their square)
body, prev = bytearray([0x04, 1, 0x05, 0]), 0
for i in range(1_000_000):
    addr = 0x7F0000000000 - i * 0x2000
    body += bytes([0x40]) + varint(zigzag(addr - prev)) + varint(0x1000) + bytes([3, 0, 0])
    prev = addr
body += bytes([0x50]) + bytes(15)   # the epoch's end: the mappings are counted there
write("maps.trace", bytes(body))

# one allocation whose stack id is 2^24 - 1, in 160 bytes (an array of callsites by id up to
# that id is 128 MiB)
body = bytes([0x04, 1, 0x05, 0, 0x0A, 32, 0]) + varint((1 << 24) - 1)
body += bytes([0x10, 0]) + varint(1036 + zigzag(0x7000000))
write("bigid.trace", body)

# 6 M allocations side by side in one segment of 24 MiB, a 5 KB file: as many live objects
# as a real trace of a loop of 6 M mallocs, more than the limit below lets the analyzer hold
body = bytearray([0x04, 1, 0x05, 0, 0x0A, 32, 0, 0, 0x10, 0]) + varint(1036 + zigzag(0x10000000))
body += bytes([0x10, 0]) + varint(1028) * 1
body = bytes(body) + (bytes([0x10, 0]) + varint(1028)) * (6_000_000 - 2)
write("live.trace", body)
PY

# bounded LIMIT TRACE [ARGS]: runs the analyzer under a limit of LIMIT seconds of CPU time
# and, with MEMORY_KB set, an address-space limit.  CPU time, not wall time: each trace takes
# at most 2.4 s of CPU, but up to 13 s of wall time with the machine's load at 15 (2 cores).
# The wall clock only bounds a run that waits without using the CPU.
bounded() {
    limit=$1
    name=$2
    shift 2
    status=0
    (
        [ -z "${MEMORY_KB:-}" ] || ulimit -v "$MEMORY_KB"
        ulimit -t "$limit"
        exec timeout 120 "$ANALYZE" "$@" "$T/$name"
    ) >"$T/$name.out" 2>"$T/$name.err" || status=$?
    [ "$status" != 152 ] && [ "$status" != 137 ] || fail "$name: not done in $limit s of CPU time"
    [ "$status" != 124 ] || fail "$name: not done in 120 s, using less than $limit s of CPU"
    [ "$status" = 0 ] || fail "$name: exit $status: $(tail -n 1 "$T/$name.err")"
}

MEMORY_KB=1000000 bounded 60 stacks.trace
grep -q "^Warnings" "$T/stacks.trace.out" || fail "stacks.trace: no report"
bounded 20 modules.trace --json
bounded 20 frees.trace --json
bounded 20 epochs.trace --json --all-epochs
bounded 20 epochs_merged.trace --json
bounded 20 headers.trace --json
bounded 20 spilled.trace --json
bounded 20 maps.trace --json

# peak RSS of one run, from the kernel's count for a child
peak_kb() {
    python3 - "$ANALYZE" "$T/$1" <<'PY'
import resource, subprocess, sys
subprocess.run([sys.argv[1], "--json", sys.argv[2]], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}
kb=$(peak_kb bigid.trace)
[ "$kb" -lt 60000 ] || fail "bigid.trace: peak RSS $kb KB, want under 60000"

# past what the machine lets it hold: one line saying so, exit 1
status=0
(ulimit -v 700000; exec timeout 60 "$ANALYZE" --json "$T/live.trace") >"$T/live.out" \
    2>"$T/live.err" || status=$?
[ "$status" = 1 ] || fail "live.trace: exit $status under a 700 MB limit, want 1"
[ "$(wc -l <"$T/live.err")" = 1 ] || fail "live.trace: stderr is not one line: $(cat "$T/live.err")"
grep -q "^churn-analyze: the trace holds more than [0-9]* live [a-z ]* at once: following them needs [0-9]* MiB more, past the [0-9]* MiB of the RLIMIT_AS" "$T/live.err" ||
    fail "live.trace: message '$(cat "$T/live.err")'"

check "$T" <<'PY'
import json, sys
T = sys.argv[1]
d = json.load(open(T + "/modules.trace.out"))
if not any("malformed record (tag 0x02)" in w for w in d["warnings"]):
    sys.exit("FAIL: modules.trace: module ids past 4096 not refused: %s" % d["warnings"])
d = json.load(open(T + "/frees.trace.out"))
if d["totals"]["frees"] != 1_000_000:
    sys.exit("FAIL: frees.trace: %d frees, want 1000000" % d["totals"]["frees"])
d = json.load(open(T + "/epochs.trace.out"))
epochs = [r["epoch"] for r in d["epochs"]]
if epochs != list(range(1, 200_001)):
    sys.exit("FAIL: epochs.trace: %d epoch rows, not 1..200000 in order" % len(epochs))
if d["totals"]["frees"] != 200_000:
    sys.exit("FAIL: epochs.trace: %d frees, want 200000" % d["totals"]["frees"])
d = json.load(open(T + "/epochs_merged.trace.out"))
rows = d["epochs"]
if (len(rows) > 4096 or rows[0]["epoch"] != 1 or rows[-1]["last_epoch"] != 200_000 or
        any(a["last_epoch"] >= b["epoch"] for a, b in zip(rows, rows[1:])) or
        sum(r["frees"] for r in rows) != 200_000):
    sys.exit("FAIL: epochs_merged.trace: %d rows, epochs %d..%d, %d frees: want at most 4096 "
             "buckets in order over 1..200000 holding the 200000 frees"
             % (len(rows), rows[0]["epoch"], rows[-1].get("last_epoch", -1),
                sum(r["frees"] for r in rows)))
d = json.load(open(T + "/headers.trace.out"))
m = d["metadata"]
if (m["segments_used"], m["segments_damaged"]) != (1, 60_000):
    sys.exit("FAIL: headers.trace: %d segments used, %d damaged; want 1, 60000"
             % (m["segments_used"], m["segments_damaged"]))
d = json.load(open(T + "/maps.trace.out"))
if d["totals"]["map_calls"] != 1_000_000:
    sys.exit("FAIL: maps.trace: %d page-level calls, want 1000000" % d["totals"]["map_calls"])
mapped = d["fragmentation"][0]["program_mapped_bytes"]
if mapped != 1_000_000 * 4096:
    sys.exit("FAIL: maps.trace: %d bytes mapped, want %d" % (mapped, 1_000_000 * 4096))
d = json.load(open(T + "/spilled.trace.out"))
t = d["totals"]
if (t["allocs"], t["frees"]) != (4_000_000 + 3000 * 16385, 3000 * 16384):
    sys.exit("FAIL: spilled.trace: %d allocations, %d frees" % (t["allocs"], t["frees"]))
PY
echo "t_analyzer_amplify: ok"
