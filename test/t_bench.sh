#!/bin/sh
# The benchmark suite in its short form (BENCH_QUICK=1: 2 rounds of small workloads, 2,000
# workerd subrequests), as CI runs it: every workload runs natively, under libchurn (with
# events, with sampled stacks, without events) and under heaptrack and prints the same result,
# and node and CPython 3.12 with their perf maps off and on (bench/frames.py) too;
# the results file has every row and the micro benchmarks' tables; libchurn and heaptrack
# count the same allocation and free events.  No figure of speed is asserted here (docs/benchmarks.md: speed is judged in
# `make bench` on a quiet machine).
. test/lib.sh

BENCH_QUICK=1 BENCH_RESULTS="$WORK/results.md" sh bench/run.sh >"$WORK/out" 2>"$WORK/err" ||
    fail "the short benchmark failed: $(tail -n 1 "$WORK/err")"
check "$WORK/results.md" <<'PY'
import os, re, sys
from churncheck import *
text = open(sys.argv[1]).read()
for workload in ("python", "threads-1", "threads-2", "sqlite", "node"):
    for mode in ("native", "libchurn", "libchurn-sampled", "libchurn-noevents",
                 "libchurn-sample512k", "heaptrack"):
        if not re.search(r"^\| %s \| %s \|" % (re.escape(workload), re.escape(mode)), text, re.M):
            fail("no row for %s under %s" % (workload, mode))
# allocation + free events: libchurn against heaptrack, within 0.5 % (start-up differs)
counts = list(re.finditer(r"^\| (\S+) \| ([\d,]+) \| ([\d,]+) \|$", text, re.M))
expect("workloads with event counts", len(counts), 5)
for m in counts:
    name, ours, theirs = m.group(1), int(m.group(2).replace(",", "")), int(m.group(3).replace(",", ""))
    if abs(ours - theirs) > 0.005 * theirs:
        fail("%s: libchurn counted %d events, heaptrack %d" % (name, ours, theirs))
# the runtimes' perf maps off and on (bench/frames.py): node always, CPython 3.12 where it is
for workload in ("node", "python3.12"):
    for mode in ("native", "native+frames", "libchurn", "libchurn+frames"):
        if not re.search(r"^\| %s \| [^|]+ \| %s \|" % (re.escape(workload), re.escape(mode)),
                         text, re.M) and not (workload == "python3.12" and
                                              "python3.12: not measured" in text):
            fail("no frames row for %s under %s" % (workload, mode))
if not re.search(r"ratio libchurn/native: subrequests/s [\d.]+", text):
    fail("no workerd ratio in the results")
if not re.search(r"ratio libchurn-sample512k/native: subrequests/s [\d.]+.*bar >= 0.97", text):
    fail("no workerd ratio of the sampled mode against its bar in the results")
if not re.search(r"^Bar: python under CHURN_SAMPLE_BYTES=524288 at most 1.05x native wall: "
                 r"[\d.]+x, (met|NOT met)$", text, re.M):
    fail("no python bar of the sampled mode in the results")
# the sampled mode's pairs against native on each interpreter there is
pythons = [("python3.11 (Debian)", "/usr/bin/python3.11"),
           ("python3.11.7 (pyenv)", os.path.expanduser("~/.pyenv/versions/3.11.7/bin/python3.11"))]
pythons = [name for name, path in pythons if os.path.exists(path)]
for name in pythons:
    if not re.search(r"^\| %s \| \d+ \| \d+ \| [\d.]+ \| [\d.]+ to [\d.]+ \|" % re.escape(name),
                     text, re.M):
        fail("no row of the sampled pairs for %s" % name)
for what in (r"1 thread\(s\): [\d.]+ ns per free\+malloc pair, [\d.]+ with their two order numbers",
             r"the writer's live map: [\d.]+ ns per free\+malloc pair",
             r"^\s+64\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+x$"):
    if not re.search(what, text, re.M):
        fail("the micro benchmarks' results lack /%s/" % what)
# issue #20's bars, each with its figure and a verdict, after everything else
bars = text[text.find("## Bars (issues #20 and #30)"):]
if not text.rstrip().endswith(bars.rstrip()) or not bars:
    fail("the results do not end with the Bars table")
rows = re.findall(r"^\| ([^|]+) \| ([\d.]+) \| (met|not met) \|$", bars, re.M)
names = [r[0] for r in rows]
for want in ("python3, every stack: wall <= 1.5x native",
             "workerd, every stack: throughput >= 0.75 of native",
             "python3 trace size: <= 0.40 bytes/event",
             "python3 (Debian's, PYTHONMALLOC=malloc), CHURN_SAMPLE_BYTES=524288: wall <= "
             "1.05x native",
             "workerd, CHURN_SAMPLE_BYTES=524288: throughput >= 0.97 of native") + tuple(
             "%s, CHURN_SAMPLE_BYTES=524288: wall <= 1.05x native" % name
             for name in pythons) + tuple(
             "%s: libchurn's overhead <= 1/4 of heaptrack's (wall)" % w
             for w in ("python", "threads-1", "threads-2", "sqlite", "node")):
    if want not in names:
        fail("the Bars table has no figure for %r" % want)
print("short benchmark: every workload and mode ran, event counts agree, workerd and the "
      "micro benchmarks measured, every bar has its figure")
PY
