#!/usr/bin/python3
"""The bars of issue #30 against this run's figures: prints a markdown table (bar, figure,
met or not met) for bench/run.sh to append to the results.

Reads build/bench/work/figures.json (bench/bench.py: under "paired_pythons" the medians of the
alternated pairs of bench/python_churn.py against native on each interpreter of
bench.PAIRED_PYTHONS, in each of bench.PAIRED_MODES with its allocator; and per
workload the trace's bytes per event) and the workerd runs in build/bench/workerd/
(bench/workerd.sh: the median of each round's own libchurn/native throughput ratio).  A bar
whose figure this run did not measure (an interpreter the machine lacks) is printed as not
measured, never as met.

Histograms only (CHURN_EVENTS=0) has no bar: it walks every allocation's stack, which alone
costs more than 1.15x native leaves (docs/benchmarks.md, "Histograms only").
"""
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import PAIRED_PYTHONS, SAMPLE_BYTES  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = os.path.join(ROOT, "build", "bench", "work", "figures.json")
WORKERD = os.path.join(ROOT, "build", "bench", "workerd")

# Wall time against native, at most: every stack on each interpreter, and the sampled mode on
# both (names as in bench.PAIRED_PYTHONS and bench.PAIRED_MODES).
EVERY_STACK_BAR = {"python3.11.7 (pyenv)": 1.6, "python3.11 (Debian)": 2.2}
SAMPLED_BAR = 1.05
SAMPLED = "CHURN_SAMPLE_BYTES=" + SAMPLE_BYTES

# "Trace bytes per event no larger than today's", on the python workload (Debian's python3,
# PYTHONMALLOC=malloc, every stack): the trace's size over churn-analyze's allocs + frees.  At
# 40,000 rounds the figure of `make bench` when issue #30 was filed (2026-12-02, the results
# in bench/results/latest.md of that day), before Python's frames were named; at BENCH_QUICK's
# 5,000 rounds, which no such run recorded, the median of 5 runs of bench.py's run_mode on
# main at 6adafd5 (0.7472 to 0.7621).  The size varies a little with the machine's speed,
# since each segment of the trace (closed every second) defines again the stacks it uses.
TODAY_BYTES_PER_EVENT = {"40000 rounds": 0.390, "5000 rounds": 0.7597}


def workerd_ratio(mode):
    """Median over rounds of a traced mode's subrequests/s against native's in the same
    round."""
    ratios = []
    for path in sorted(glob.glob(os.path.join(WORKERD, mode + ".*.json"))):
        native = os.path.join(WORKERD, "native." + os.path.basename(path)[len(mode) + 1:])
        if not os.path.exists(native):
            continue
        t, n = json.load(open(path)), json.load(open(native))
        ratios.append(t["subrequests_per_s"] / n["subrequests_per_s"])
    return statistics.median(ratios) if ratios else None


def main():
    if not os.path.exists(FIGURES):
        sys.exit("bench/bars.py: %s is missing (run through `make bench`)" % FIGURES)
    fig = json.load(open(FIGURES))
    rows = []

    def bar(name, value, spec, ok):
        if value is None:
            rows.append((name, "not measured", "not met"))
        else:
            rows.append((name, format(value, spec), "met" if ok(value) else "not met"))

    paired = fig.get("paired_pythons", {})

    def wall(name, mode):
        return paired.get(name, {}).get(mode, {}).get("wall_x_native")

    for name, _ in PAIRED_PYTHONS:
        bar("%s, %s: wall <= %.2fx native" % (name, SAMPLED, SAMPLED_BAR), wall(name, SAMPLED),
            ".3f", lambda v: v <= SAMPLED_BAR)
    bar("workerd, %s: throughput >= 0.97 of native" % SAMPLED,
        workerd_ratio("libchurn-sample512k"), ".3f", lambda v: v >= 0.97)
    for name, _ in PAIRED_PYTHONS:
        limit = EVERY_STACK_BAR[name]
        bar("%s, every stack (PYTHONMALLOC=malloc): wall <= %.1fx native" % (name, limit),
            wall(name, "every stack"),
            ".3f", lambda v, limit=limit: v <= limit)
    bar("workerd, every stack: throughput >= 0.75 of native", workerd_ratio("libchurn"), ".3f",
        lambda v: v >= 0.75)
    python = fig.get("python", {})
    today = TODAY_BYTES_PER_EVENT.get(python.get("size"))
    bar("python workload (Debian's python3, PYTHONMALLOC=malloc, %s), every stack: trace "
        "bytes/event <= %s (when issue #30 was filed)" % (python.get("size"), today),
        python.get("bytes_per_event") if today is not None else None, ".4f",
        lambda v: v <= today)

    print("## Bars (issue #30)")
    print()
    print("Each python figure is the median of the alternated pairs' own ratios (wall time "
          "against the native run of its pair), each workerd figure the median of its rounds' "
          "own ratios, the trace size the median of the rounds' python traces over their "
          "events.  Histograms only (CHURN_EVENTS=0) has no bar.")
    print()
    print("| bar | figure | |")
    print("|---|---:|---|")
    for name, value, verdict in rows:
        print("| %s | %s | %s |" % (name, value, verdict))


if __name__ == "__main__":
    main()
