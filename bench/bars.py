#!/usr/bin/python3
"""The bars of issues #20 and #30 against this run's figures: prints a markdown table (bar,
figure, met or not met) for bench/run.sh to append to the results.

Reads build/bench/work/figures.json (bench/bench.py: medians over the rounds of each run's
wall time against the native run of its round, the trace's bytes per event, and under
"sampled_pythons" the medians of the sampled mode's alternated pairs against native on each
interpreter of bench.SAMPLED_PYTHONS, with its default allocator) and the
workerd runs in build/bench/workerd/ (bench/workerd.sh: the median of each round's own
libchurn/native throughput ratio).  A bar whose figure this run did not measure is printed as
not measured, never as met.

Histograms only (CHURN_EVENTS=0) has no bar: it walks every allocation's stack, which alone
costs more than 1.15x native leaves (docs/benchmarks.md, "What the open bars would take").
"""
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import SAMPLE_BAR, SAMPLED_PYTHONS  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = os.path.join(ROOT, "build", "bench", "work", "figures.json")
WORKERD = os.path.join(ROOT, "build", "bench", "workerd")


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

    sampled = fig.pop("sampled_pythons", {})
    wall = {w: f["wall_x_native"] for w, f in fig.items()}
    py = wall.get("python", {})
    bar("python3, every stack: wall <= 1.5x native", py.get("libchurn"), ".2f",
        lambda v: v <= 1.5)
    for w in fig:
        # libchurn's default mode against heaptrack's, as the issue puts it
        lc, ht = wall[w].get("libchurn"), wall[w].get("heaptrack")
        share = (lc - 1) / (ht - 1) if lc is not None and ht is not None and ht > 1 else None
        bar("%s: libchurn's overhead <= 1/4 of heaptrack's (wall)" % w, share, ".2f",
            lambda v: v <= 0.25)
    bar("workerd, every stack: throughput >= 0.75 of native", workerd_ratio("libchurn"), ".3f",
        lambda v: v >= 0.75)
    bar("python3 trace size: <= 0.40 bytes/event", fig.get("python", {}).get("bytes_per_event"),
        ".3f", lambda v: v <= 0.40)
    for name, _ in SAMPLED_PYTHONS:
        bar("%s, CHURN_SAMPLE_BYTES=524288: wall <= %.2fx native" % (name, SAMPLE_BAR),
            sampled.get(name, {}).get("wall_x_native"), ".3f", lambda v: v <= SAMPLE_BAR)
    bar("python3 (Debian's, PYTHONMALLOC=malloc), CHURN_SAMPLE_BYTES=524288: wall <= %.2fx "
        "native" % SAMPLE_BAR, py.get("libchurn-sample512k"), ".2f", lambda v: v <= SAMPLE_BAR)
    bar("workerd, CHURN_SAMPLE_BYTES=524288: throughput >= 0.97 of native",
        workerd_ratio("libchurn-sample512k"), ".3f", lambda v: v >= 0.97)

    print("## Bars (issues #20 and #30)")
    print()
    print("Each figure is a median of this run's rounds (wall time against the native run of the "
          "same round; overhead is the ratio minus 1); the interpreters' sampled bars are "
          "medians of alternated pairs.")
    print()
    print("| bar | figure | |")
    print("|---|---:|---|")
    for name, value, verdict in rows:
        print("| %s | %s | %s |" % (name, value, verdict))


if __name__ == "__main__":
    main()
