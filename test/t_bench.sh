#!/bin/sh
# The benchmark suite in its short form (BENCH_QUICK=1: 2 rounds of small workloads, 2,000
# workerd subrequests, 2 pairs), as CI runs it: every workload runs natively, under libchurn
# (with events, with sampled stacks, without events, sampled by bytes) and under heaptrack and
# prints the same result, and node and CPython 3.12 with their perf maps off and on
# (bench/frames.py) too; the results file has every row, the alternated pairs of each
# interpreter and the micro benchmarks' tables; libchurn and heaptrack count the same
# allocation and free events; the results end with each of issue #30's bars on its line.  No
# figure of speed is asserted here (docs/benchmarks.md: speed is judged in `make bench` on a
# quiet machine).
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
# the alternated pairs against native, every stack and sampled, on each interpreter there is
pyenv = os.path.expanduser("~/.pyenv/versions/3.11.7/bin/python3.11")
pythons = [("python3.11 (Debian)", "/usr/bin/python3.11", "2.2"),
           ("python3.11.7 (pyenv)", pyenv, "1.6")]
for name, path, _ in pythons:
    for mode, allocator in (("every stack", "malloc"), ("CHURN_SAMPLE_BYTES=524288", "pymalloc")):
        row = re.search(r"^\| %s \| %s \| %s \| \d+ \| \d+ \| [\d.]+ \| [\d.]+ to "
                        r"[\d.]+ \|" % (re.escape(name), allocator, re.escape(mode)), text,
                        re.M)
        if os.path.exists(path) and not row:
            fail("no row of the pairs for %s under %s" % (name, mode))
        if row and not os.path.exists(path):
            fail("a row of the pairs for %s, which the machine lacks" % name)
for what in (r"1 thread\(s\): [\d.]+ ns per free\+malloc pair, [\d.]+ with their two order numbers",
             r"the writer's live map: [\d.]+ ns per free\+malloc pair",
             r"^\s+64\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+x$"):
    if not re.search(what, text, re.M):
        fail("the micro benchmarks' results lack /%s/" % what)
# issue #30's bars, each on its line with its figure and a verdict, after everything else;
# an interpreter the machine lacks has its bars said not measured, and not met
bars = text[text.find("## Bars (issue #30)"):]
if "## Bars (issue #30)" not in text or not text.rstrip().endswith(bars.rstrip()):
    fail("the results do not end with the Bars table of issue #30")
rows = re.findall(r"^\| ([^|]+) \| ([^|]+) \| ([^|]+) \|$", bars, re.M)
want = []
for name, path, every in pythons:
    figure = r"[\d.]+ \| (met|not met)" if os.path.exists(path) else r"not measured \| not met"
    want += [(r"%s, CHURN_SAMPLE_BYTES=524288: wall <= 1\.05x native" % re.escape(name),
              figure),
             (r"%s, every stack \(PYTHONMALLOC=malloc\): wall <= %sx native"
              % (re.escape(name), re.escape(every)), figure)]
number = r"[\d.]+ \| (met|not met)"
want += [(r"workerd, CHURN_SAMPLE_BYTES=524288: throughput >= 0\.97 of native", number),
         (r"workerd, every stack: throughput >= 0\.75 of native", number),
         (r"python workload \(Debian's python3, PYTHONMALLOC=malloc, 5000 rounds\), every "
          r"stack: trace bytes/event <= [\d.]+ \(when issue #30 was filed\)", number)]
lines = ["| %s | %s | %s |" % r for r in rows]
for bar, figure in want:
    found = [l for l in lines if re.fullmatch(r"\| %s \| %s \|" % (bar, figure), l)]
    if len(found) != 1:
        fail("the Bars table has %d lines for /%s/ with its figure" % (len(found), bar))
expect("bars in the table (issue #30's, no other)", len(rows), len(want))
print("short benchmark: every workload and mode ran, event counts agree, the pairs, workerd "
      "and the micro benchmarks measured, each of issue #30's bars on its line")
PY
