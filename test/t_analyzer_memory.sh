#!/bin/sh
# The analyzer's memory is bounded by the live set and the stack table, not by the length of
# the trace: 20 times more events (balanced allocs and frees) must not raise its peak RSS
# by more than a few MB.
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh

python3 - "$ANALYZE" "$WORK" <<'PY'
import json, os, resource, subprocess, sys
sys.path.insert(0, "test/tools")
import mktrace
A, T = sys.argv[1], sys.argv[2]

enc = mktrace.Encoder()          # one segment's events, reused by every segment
for i in range(100000):
    a = 0x10000000 + (i % 64) * 64
    enc.record(["alloc", 0, a, 32 + i % 7, 0, 1 + i % 50])
    enc.record(["free", 0, a, 32 + i % 7, 0, 1 + i % 50, 0])
body = enc.out.hex()

def trace(name, nseg):
    segs = []
    for s in range(nseg):
        recs = mktrace.prelude(s, s) + [["stack", k, [0x1000 * k]] for k in range(1, 51)]
        recs += [["epoch", s], ["raw", body], ["epoch_end", {"epoch": s}]]
        segs.append({"seq": s, "first_epoch": s, "last_epoch": s, "records": recs})
    path = os.path.join(T, name)
    open(path, "wb").write(mktrace.build({"segments": segs}))
    return path

def peak_kb(path, events):
    # each run in its own child so ru_maxrss is that run's peak
    code = ("import resource, subprocess, sys, json\n"
            "p = subprocess.run([sys.argv[1], '--json', sys.argv[2]], stdout=subprocess.PIPE)\n"
            "d = json.loads(p.stdout)\n"
            "assert p.returncode == 0 and d['totals']['allocs'] == int(sys.argv[3]), d['totals']\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", code, A, path, str(events)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if out.returncode != 0:
        print("t_analyzer_memory: analyzing %s failed: %s" % (path, out.stderr.decode()[-300:]))
        sys.exit(1)
    return int(out.stdout)

small = peak_kb(trace("small", 2), 2 * 100000)
large = peak_kb(trace("large", 40), 40 * 100000)
if large - small > 4096:
    print("t_analyzer_memory: peak RSS grows with trace length: %d KB for 2 segments, %d KB for 40"
          % (small, large))
    sys.exit(1)
PY

# The live map doubles without its old table beside it whole: 340,000 live objects (a table of
# 2^20 slots, 32 MiB, grown from one of 16 MiB) cost the analyzer about the new table's 16 MiB
# more than 320,000 (the 16 MiB table, not doubled); with both tables held at once the
# difference was 24 MiB and more.
python3 - "$ANALYZE" "$WORK" <<'PY'
import os, resource, subprocess, sys
sys.path.insert(0, "test/tools")
import mktrace
A, T = sys.argv[1], sys.argv[2]

PER = 20000  # objects per segment: 320,000 is 16 segments, 340,000 is 17
bodies = []
for s in range(17):
    enc = mktrace.Encoder()
    for i in range(s * PER, (s + 1) * PER):
        enc.record(["alloc", 0, 0x10000000 + i * 32, 24, 8, 1 + i % 50])
    bodies.append(enc.out.hex())

def trace(name, n):
    segs = []
    for s in range(n // PER):
        recs = mktrace.prelude(s, 0) + [["stack", k, [0x1000 * k]] for k in range(1, 51)]
        recs += [["epoch", 0], ["raw", bodies[s]]]
        segs.append({"seq": s, "first_epoch": 0, "last_epoch": 0, "records": recs})
    path = os.path.join(T, name)
    open(path, "wb").write(mktrace.build({"segments": segs}))
    return path

def peak_kb(path):
    code = ("import resource, subprocess, sys\n"
            "p = subprocess.run([sys.argv[1], '--json', sys.argv[2]], stdout=subprocess.DEVNULL)\n"
            "assert p.returncode == 0\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    return int(subprocess.check_output([sys.executable, "-c", code, A, path]))

small = peak_kb(trace("live320k", 320000))
large = peak_kb(trace("live340k", 340000))
if large - small > 20 << 10:
    print("t_analyzer_memory: the live map's doubling held both tables: peak RSS %d KB for "
          "320,000 live objects, %d KB for 340,000" % (small, large))
    sys.exit(1)
print("live map: %d KB for 320,000 live objects, %d KB for 340,000" % (small, large))
PY
echo "PASS: t_analyzer_memory"
