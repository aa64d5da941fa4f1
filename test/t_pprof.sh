#!/bin/sh
# --pprof on the demo workload, read back by the real pprof (built here from Debian's
# golang-github-google-pprof-dev sources): every sample type sums to the JSON report's
# figure, and the leak's location carries its function and file:line.
. test/lib.sh

build_pprof

build_c request_loop test/programs/request_loop.c
traced "$WORK/demo.zst" "$WORK/demo.out" "$WORK/request_loop" 200
analyze "$WORK/demo.zst" "$WORK/demo.json"
"$ANALYZE" --pprof -o "$WORK/profile.pb.gz" "$WORK/demo.zst" 2>"$WORK/pprof.err" ||
    fail "churn-analyze --pprof failed: $(tail -n 1 "$WORK/pprof.err")"
[ "$(head -c 2 "$WORK/profile.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] ||
    fail "profile.pb.gz is not gzip"
"$WORK/pprof" -raw "$WORK/profile.pb.gz" >"$WORK/raw.txt" 2>"$WORK/raw.err" ||
    fail "pprof -raw cannot read the profile: $(tail -n 1 "$WORK/raw.err")"

check "$WORK" <<'PY'
import os, re, sys
from churncheck import *
work = sys.argv[1]
report = load(os.path.join(work, "demo.json"))
lines = open(os.path.join(work, "raw.txt")).read().split("\n")
try:
    at = lines.index("Samples:")
except ValueError:
    fail("pprof -raw printed no Samples section")
types = [t.split("/")[0] for t in lines[at + 1].replace("[dflt]", "").split()]
expect("sample types", types, ["alloc_space", "alloc_objects", "inuse_space", "inuse_objects",
                               "retained_space", "growth_space", "leaked_space", "pinned_space",
                               "peak_space", "temporary_objects"])
sums = [0] * len(types)
samples = []
for line in lines[at + 2:]:
    m = re.match(r"^\s+([\d\s]+):\s*([\d\s]*)$", line)
    if not m:
        break
    values = [int(v) for v in m.group(1).split()]
    samples.append((values, m.group(2).split()))
    sums = [s + v for s, v in zip(sums, values)]
t, last = field(report, "totals"), field(report, "epochs")[-1]
expect("alloc_space", sums[0], t["alloc_bytes"])
expect("alloc_objects", sums[1], t["allocs"])
expect("inuse_space", sums[2], last["live_bytes"])
expect("inuse_objects", sums[3], last["live_count"])
expect("retained_space", sums[4], sum(g["retained_bytes"] for g in field(report, "growth")))
expect("leaked_space", sums[6], field(report, "leaked_at_exit")["bytes"])
expect("pinned_space", sums[7], sum(round(c["pinned_bytes"]) for c in field(report, "fragmentation_callsites")
                                    if c["pinned_bytes"] > 0))
expect("peak_space", sums[8], field(report, "peak", "bytes"))
expect("temporary_objects", sums[9], t["temporary"])
locations = {}
for line in lines:
    m = re.match(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+) (\S+):(\d+)", line)
    if m:
        locations[m.group(1)] = (m.group(2), m.group(3), int(m.group(4)))
leak = [s for s in samples if s[0][2] == 48 * 200]
if len(leak) != 1:
    fail("no single sample with the leak's 9600 live bytes: %s" % samples)
fn, path, line = locations.get(leak[0][1][0], (None, None, 0))
if fn != "remember_session" or not path.endswith("request_loop.c") or not line:
    fail("the leak's innermost location is %r, not remember_session at request_loop.c:N" % ((fn, path, line),))
print("pprof: %d samples, alloc_space %d, inuse_space %d, leak at %s:%d" % (len(samples), sums[0], sums[2], path, line))
PY
