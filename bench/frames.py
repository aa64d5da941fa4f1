#!/usr/bin/python3
"""The cost of naming JavaScript and Python frames (docs/runtimes.md, "JavaScript and Python
frames"): node and CPython 3.12 with the runtime's perf map off and on, natively and under
libchurn, in paired rounds: every round runs the four modes of a workload one after the
other, in an order that turns by one each round, so that drift in the machine's speed hits
every mode alike.  "on" is what `churn run` sets: NODE_OPTIONS=--perf-basic-prof
--interpreted-frames-native-stack for node, PYTHONPERFSUPPORT=1 for CPython (its default
allocator, pymalloc, traced by libchurn), and under libchurn its default runtime frames
(the perf map copied into the trace, CPython's frame chain read); "off" under libchurn is
CHURN_RUNTIME_FRAMES=0, no runtime frames at all.  Every run must print what the native run with the
map off prints: the frames must not change what the program computes.

Run by bench/run.sh (`make bench`) after bench.py, whose helpers (build/bench/detach) it uses;
alone: BENCH_NODE=$(test/node/install.sh) python3 bench/frames.py.  BENCH_RUNS (rounds,
default 5), BENCH_QUICK=1 (2 rounds, small workloads), BENCH_PYTHON312 (default pyenv's
3.12.1; without one, the section says python is not measured).  Prints a markdown section.
"""
import glob
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (spawn, clean_env, the paths)

MODES = ("native", "native+frames", "libchurn", "libchurn+frames")
PYTHON312 = os.environ.get("BENCH_PYTHON312") or os.path.expanduser(
    "~/.pyenv/versions/3.12.1/bin/python3.12")


def workloads(quick):
    node_rounds = 10000 if quick else 100000
    py_rounds = 5000 if quick else 40000
    wls = [dict(name="node", argv=[bench.NODE, os.path.join(bench.ROOT, "bench", "node_churn.js"),
                                   str(node_rounds)],
                env={}, frames={"NODE_OPTIONS": "--perf-basic-prof "
                                                "--interpreted-frames-native-stack"},
                size="%d rounds" % node_rounds)]
    if os.access(PYTHON312, os.X_OK):
        wls.append(dict(name="python3.12",
                        argv=[PYTHON312, os.path.join(bench.ROOT, "bench", "python_churn.py"),
                              str(py_rounds)],
                        env={"PYTHONHASHSEED": "0"}, frames={"PYTHONPERFSUPPORT": "1"},
                        size="%d rounds, pymalloc" % py_rounds))
    return wls


def run(wl, mode, rnd):
    env = dict(bench.clean_env(), **wl["env"])
    if mode.endswith("+frames"):
        env.update(wl["frames"])
    trace = None
    if mode.startswith("libchurn"):
        trace = os.path.join(bench.WORK, "frames-%s-%s-%d.zst" % (wl["name"], mode, rnd))
        env.update(LD_PRELOAD=bench.LIBCHURN, CHURN_OUT=trace)
        if not mode.endswith("+frames"):
            env["CHURN_RUNTIME_FRAMES"] = "0"
    out = os.path.join(bench.WORK, "frames-%s-%s.out" % (wl["name"], mode))
    # the run's own perf map, and the V8 log --perf-basic-prof has node write where it runs
    made = ("/tmp/perf-*.map", "isolate-0x*-v8.log")
    before = {p for pattern in made for p in glob.glob(pattern)}
    wall, cpu, rss_kb, status = bench.spawn(wl["argv"], env, None, out)
    if status != 0:
        bench.fail("%s (%s) exited with wait status %#x" % (wl["name"], mode, status))
    for path in {p for pattern in made for p in glob.glob(pattern)} - before:
        os.unlink(path)
    if trace:
        for path in glob.glob(trace[:-4] + "*"):
            os.unlink(path)
    with open(out) as f:
        return dict(wall=wall, cpu=cpu, rss=rss_kb, lines=f.read())


def main():
    quick = os.environ.get("BENCH_QUICK") == "1"
    runs = 2 if quick else int(os.environ.get("BENCH_RUNS") or 5)
    if not bench.NODE:
        bench.fail("BENCH_NODE is not set: the pinned node comes from test/node/install.sh")
    os.makedirs(bench.WORK, exist_ok=True)
    bench.become_subreaper()
    wls = workloads(quick)
    data = {w["name"]: {m: [] for m in MODES} for w in wls}
    for rnd in range(runs):
        for w in wls:
            order = MODES[rnd % len(MODES):] + MODES[:rnd % len(MODES)]
            res = {m: run(w, m, rnd) for m in order}
            for m in MODES:
                if res[m]["lines"] != res["native"]["lines"]:
                    bench.fail("%s under %s printed a different result than native" %
                               (w["name"], m))
                data[w["name"]][m].append(res[m])
    print("## JavaScript and Python frames: perf map off and on, %d paired round(s)%s "
          "(bench/frames.py)" % (runs, " (BENCH_QUICK)" if quick else ""))
    print()
    print("| workload | size | mode | wall s | cpu s | peak RSS MiB | wall vs map off | "
          "cpu vs map off |")
    print("|---|---|---|---|---|---|---|---|")
    for w in wls:
        d = data[w["name"]]
        for m in MODES:
            wall = statistics.median(r["wall"] for r in d[m])
            cpu = statistics.median(r["cpu"] for r in d[m])
            rss = statistics.median(r["rss"] for r in d[m]) / 1024
            base = m[:-len("+frames")] if m.endswith("+frames") else m
            # the ratios of each round's pair, then their median
            ratio = statistics.median(a["wall"] / b["wall"] for a, b in zip(d[m], d[base]))
            cratio = statistics.median(a["cpu"] / b["cpu"] for a, b in zip(d[m], d[base]))
            print("| %s | %s | %s | %.2f | %.2f | %.1f | %.2fx | %.2fx |" %
                  (w["name"], w["size"], m, wall, cpu, rss, ratio, cratio))
    if not os.access(PYTHON312, os.X_OK):
        print()
        print("python3.12: not measured: no CPython 3.12 at %s (BENCH_PYTHON312)" % PYTHON312)
    print()


if __name__ == "__main__":
    main()
