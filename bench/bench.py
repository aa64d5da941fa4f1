#!/usr/bin/python3
"""Measures libchurn against a native run and against heaptrack on real workloads.

Run by bench/run.sh (`make bench`), which builds the helpers this script expects in
build/bench/.  For every round, for every workload, it runs the five modes one after the other
(native, libchurn, libchurn with CHURN_STACK_SAMPLE=64, libchurn with CHURN_EVENTS=0,
libchurn with CHURN_SAMPLE_BYTES=524288, heaptrack), so that drift in the machine's speed hits every mode alike, and then times both
analyzers on that round's traces.

Each run is started with posix_spawn (through build/bench/detach, so that its peak RSS does
not start at this interpreter's) and reaped with os.wait4: wall time from time.perf_counter
around spawn..wait4, CPU as user+system from the rusage, peak RSS as its ru_maxrss.
Heaptrack is a shell script whose children are the traced program, heaptrack_interpret and a
compressor; wait4 on it gives the CPU of the whole tree (the true
cost of tracing) but the largest peak RSS in the tree, so the traced program's peak RSS comes
from bench/maxrss_preload.c instead (see there).

After the rounds, python_pairs takes alternated pairs of bench/python_churn.py against native
on each interpreter of PAIRED_PYTHONS, in each of PAIRED_MODES (every stack, and
CHURN_SAMPLE_BYTES=SAMPLE_BYTES): the figures of issue 30's python bars (bench/bars.py).

Environment: BENCH_RUNS (rounds, default 5), BENCH_PAIRS (pairs per interpreter and mode,
default 10), BENCH_QUICK=1 (2 rounds and 2 pairs, small workloads, for CI), BENCH_RESULTS
(where to write, default bench/results/latest.md).
Writes the results file and prints the same markdown to stdout.
"""
import ctypes
import datetime
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
WORK = os.path.join(BUILD, "bench", "work")
RESULTS = os.environ.get("BENCH_RESULTS") or os.path.join(ROOT, "bench", "results", "latest.md")
# Debian's python 3.11, not whatever `python3` a version manager puts first on PATH.
PYTHON = "/usr/bin/python3"
LIBCHURN = os.path.join(BUILD, "libchurn.so")
ANALYZER = os.path.join(BUILD, "churn-analyze")
# The pinned node from test/node/install.sh, which bench/run.sh runs.
NODE = os.environ.get("BENCH_NODE", "")
MAXRSS_PRELOAD = os.path.join(BUILD, "bench", "libmaxrss.so")
THREADS = os.path.join(BUILD, "bench", "threads")
DETACH = os.path.join(BUILD, "bench", "detach")
PR_SET_CHILD_SUBREAPER = 36

MODES = ("native", "libchurn", "libchurn-sampled", "libchurn-noevents", "libchurn-sample512k",
         "heaptrack")
SAMPLE = "64"  # CHURN_STACK_SAMPLE of the libchurn-sampled mode
SAMPLE_BYTES = "524288"  # CHURN_SAMPLE_BYTES of the libchurn-sample512k mode
# The interpreters issue 30's python bars are judged on, by alternated pairs of
# bench/python_churn.py against native (python_pairs): Debian's, and pyenv's 3.11.7 where the
# machine has it.
PAIRED_PYTHONS = (("python3.11 (Debian)", "/usr/bin/python3.11"),
                  ("python3.11.7 (pyenv)",
                   os.path.expanduser("~/.pyenv/versions/3.11.7/bin/python3.11")))
# The modes paired against native on each of PAIRED_PYTHONS: the name the results and
# figures.json give it, the options that make it and the allocator both runs of a pair use.
# Every stack is libchurn's defaults (Python's frames from the interpreter's chain included,
# CHURN_RUNTIME_FRAMES=1) with PYTHONMALLOC=malloc, the workload issue #30's figures and its
# bars of half their overhead were taken on; the sampled mode, whose bar is to be left on in
# what a python program runs, with the default allocator, pymalloc, traced through its hooks.
PAIRED_MODES = (("every stack", {}, "malloc"),
                ("CHURN_SAMPLE_BYTES=" + SAMPLE_BYTES, {"CHURN_SAMPLE_BYTES": SAMPLE_BYTES},
                 "pymalloc"))


def fail(msg):
    sys.stderr.write("bench: %s\n" % msg)
    sys.exit(1)


def workloads(quick):
    """The workloads, each a dict: name, argv, stdin file, extra environment, size text (and
    ops, the total operations, for the thread workloads)."""
    py_rounds = 5000 if quick else 40000
    thread_ops = 300000 if quick else 3000000
    sql_rows = 30000 if quick else 300000
    node_rounds = 10000 if quick else 100000
    sql = os.path.join(WORK, "sqlite_churn.sql")
    with open(os.path.join(ROOT, "bench", "sqlite_churn.sql")) as src, open(sql, "w") as dst:
        dst.write(".parameter set @rows %d\n" % sql_rows)
        dst.write(src.read())
    py_env = {"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0"}
    return [
        dict(name="python", argv=[PYTHON, os.path.join(ROOT, "bench", "python_churn.py"),
                                  str(py_rounds)],
             stdin=None, env=py_env, size="%d rounds" % py_rounds),
        dict(name="threads-1", argv=[THREADS, "1", str(thread_ops)], stdin=None, env={},
             size="1 x %d ops" % thread_ops, ops=thread_ops),
        dict(name="threads-2", argv=[THREADS, "2", str(thread_ops)], stdin=None, env={},
             size="2 x %d ops" % thread_ops, ops=2 * thread_ops),
        dict(name="sqlite", argv=[shutil.which("sqlite3") or "sqlite3", ":memory:"], stdin=sql,
             env={}, size="%d rows" % sql_rows),
        dict(name="node", argv=[NODE,
                                os.path.join(ROOT, "bench", "node_churn.js"), str(node_rounds)],
             stdin=None, env={}, size="%d rounds" % node_rounds),
    ]


def spawn(argv, env, stdin=None, stdout=os.devnull, stderr=os.devnull):
    """Runs argv to completion; returns (wall s, cpu s, peak RSS KiB, wait status).

    argv is started through build/bench/detach (see bench/detach.c for why) and reaped here,
    as this process is a child subreaper, with os.wait4.  LD_PRELOAD in env is handed to
    detach under another name so that it applies to argv only."""
    env = dict(env)
    if "LD_PRELOAD" in env:
        env["DETACH_LD_PRELOAD"] = env.pop("LD_PRELOAD")
    rfd, wfd = os.pipe()
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, stdin or os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        (os.POSIX_SPAWN_OPEN, 2, stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        (os.POSIX_SPAWN_DUP2, wfd, 3),
    ]
    t0 = time.perf_counter()
    launcher = os.posix_spawn(DETACH, [DETACH] + list(argv), env, file_actions=actions)
    os.close(wfd)
    with os.fdopen(rfd) as pipe:
        reported = pipe.read().strip()
    _, lstatus = os.waitpid(launcher, 0)
    if lstatus != 0 or not reported.isdigit():
        fail("could not start %s (detach status %#x)" % (argv[0], lstatus))
    _, status, ru = os.wait4(int(reported), 0)
    wall = time.perf_counter() - t0
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, status


def become_subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        fail("prctl(PR_SET_CHILD_SUBREAPER): %s" % os.strerror(ctypes.get_errno()))


def clean_env():
    """The caller's environment without anything that would trace or steer a tracer."""
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("CHURN_") and not k.startswith("BENCH_")}
    return env


def one_file(pattern, what):
    found = sorted(glob.glob(pattern))
    if len(found) != 1:
        fail("expected one %s matching %s, found %d" % (what, pattern, len(found)))
    return found[0]


def run_mode(wl, mode, rnd):
    """One run of one workload in one mode; returns a dict of measurements."""
    tag = "%s.%s.%d" % (wl["name"], mode, rnd)
    out = os.path.join(WORK, tag + ".out")
    err = os.path.join(WORK, tag + ".err")
    env = clean_env()
    env.update(wl["env"])
    argv = list(wl["argv"])
    trace_pattern = None
    rss_file = None
    if mode.startswith("libchurn"):
        trace = os.path.join(WORK, tag + ".churn")
        env["LD_PRELOAD"] = LIBCHURN
        env["CHURN_OUT"] = trace
        if mode == "libchurn-noevents":
            env["CHURN_EVENTS"] = "0"
        if mode == "libchurn-sampled":
            env["CHURN_STACK_SAMPLE"] = SAMPLE
        if mode == "libchurn-sample512k":
            env["CHURN_SAMPLE_BYTES"] = SAMPLE_BYTES
        trace_pattern = trace
    elif mode == "heaptrack":
        prefix = os.path.join(WORK, tag + ".heaptrack")
        argv = [shutil.which("heaptrack"), "-o", prefix] + argv
        rss_file = os.path.join(WORK, tag + ".maxrss")
        env["LD_PRELOAD"] = MAXRSS_PRELOAD
        env["BENCH_MAXRSS_OUT"] = rss_file
        trace_pattern = prefix + ".*"
    for stale in glob.glob(os.path.join(WORK, tag + ".*")):
        os.unlink(stale)
    wall, cpu, rss_kb, status = spawn(argv, env, wl["stdin"], out, err)
    if status != 0:
        with open(err, errors="replace") as f:
            tail = f.read()[-2000:]
        fail("%s under %s exited with wait status %#x; stderr ends:\n%s"
             % (wl["name"], mode, status, tail))
    with open(out, errors="replace") as f:
        lines = f.read().splitlines()
    res = dict(wall=wall, cpu=cpu, rss_kb=rss_kb, lines=lines, helper_rss_kb=None,
               trace=None, trace_bytes=None)
    if trace_pattern:
        res["trace"] = one_file(trace_pattern, "trace of " + tag)
        res["trace_bytes"] = os.path.getsize(res["trace"])
    if rss_file:
        target = os.path.realpath(wl["argv"][0])
        mine, others = [], []
        with open(rss_file) as f:
            for line in f:
                exe, kb = line.rsplit(" ", 1)
                (mine if exe == target else others).append(int(kb))
        if len(mine) != 1:
            fail("%s: expected one peak RSS line for %s in %s, found %d"
                 % (tag, target, rss_file, len(mine)))
        res["rss_kb"] = mine[0]
        res["helper_rss_kb"] = max(others)
    return res


def time_analyzer(argv, tag):
    err = os.path.join(WORK, tag + ".err")
    wall, _, rss_kb, status = spawn(argv, clean_env(), stderr=err)
    if status != 0:
        with open(err, errors="replace") as f:
            fail("%s exited with wait status %#x: %s" % (" ".join(argv), status, f.read()[-500:]))
    return dict(wall=wall, rss_kb=rss_kb)


def churn_events(trace):
    """allocs + frees from the analyzer's JSON totals."""
    proc = subprocess.run([ANALYZER, "--json", trace], capture_output=True, text=True)
    if proc.returncode != 0:
        fail("churn-analyze --json %s failed: %s" % (trace, proc.stderr.strip()[-500:]))
    try:
        totals = json.loads(proc.stdout)["totals"]
        return int(totals["allocs"]) + int(totals["frees"])
    except (ValueError, KeyError, TypeError) as e:
        fail("churn-analyze --json %s: no totals.allocs/frees (%s)" % (trace, e))


def heaptrack_events(path):
    """Allocation and free records ('+' and '-' lines) in a heaptrack data file."""
    unpack = "zstd" if path.endswith(".zst") else "gzip"
    dec = subprocess.Popen([unpack, "-dc", path], stdout=subprocess.PIPE)
    count = subprocess.run(["grep", "-c", "^[-+] "], stdin=dec.stdout, capture_output=True,
                           text=True)
    dec.stdout.close()
    if dec.wait() != 0:
        fail("cannot decompress %s" % path)
    return int(count.stdout.strip() or 0)


def result_line(lines):
    """The workload's own summary line (every workload prints one containing 'checksum=' or a
    sqlite result row), used to check that tracing did not change what the program did."""
    return lines[-1] if lines else ""


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def machine_facts():
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return dict(date=datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                kernel=platform.release(), cpu=model, ncpu=os.cpu_count())


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, spec):
    return "—" if v is None else format(v, spec)


def python_pairs(quick, pairs):
    """Native against each of PAIRED_MODES on each of PAIRED_PYTHONS: pairs of runs of
    bench/python_churn.py, the order turning each pair (native first, then traced first), the
    modes' pairs taken in turn, so that a slow moment of the machine falls on both runs of a
    pair alike and on every mode.  Returns, per interpreter found and per mode, the wall and
    CPU ratios of each pair.

    Each mode's pairs run with its allocator (PAIRED_MODES): PYTHONMALLOC=malloc for every
    stack, the default pymalloc (PYTHONMALLOC taken out of the environment) for the sampled
    mode.  The rounds' python workload (Debian's python3, PYTHONMALLOC=malloc) keeps its rows
    in the cost table beside these, and the trace size's bar."""
    rounds = 5000 if quick else 40000
    script = os.path.join(ROOT, "bench", "python_churn.py")
    out = os.path.join(WORK, "pairs.out")
    trace = os.path.join(WORK, "pairs.churn")
    found = {}
    for name, py in PAIRED_PYTHONS:
        if not os.path.exists(py):
            sys.stderr.write("bench: %s: no %s, its bars are not measured\n" % (name, py))
            continue
        base = {k: v for k, v in clean_env().items() if k != "PYTHONMALLOC"}
        base["PYTHONHASHSEED"] = "0"
        spawn([py, script, str(rounds)], base)  # untimed, for the page cache
        ratios = {mode: [] for mode, _, _ in PAIRED_MODES}
        for i in range(pairs):
            for mode, options, allocator in PAIRED_MODES:
                env = dict(base, PYTHONMALLOC="malloc") if allocator == "malloc" else base
                sys.stderr.write("bench: pair %d/%d %s, %s\n" % (i + 1, pairs, name, mode))
                traced = dict(env, LD_PRELOAD=LIBCHURN, CHURN_OUT=trace, **options)
                runs = {}
                for run in (("native", "traced") if i % 2 == 0 else ("traced", "native")):
                    for stale in glob.glob(trace + "*"):
                        os.unlink(stale)
                    e = env if run == "native" else traced
                    wall, cpu, _, status = spawn([py, script, str(rounds)], e, None, out)
                    if status != 0:
                        fail("%s (%s) exited with wait status %#x" % (name, run, status))
                    with open(out) as f:
                        runs[run] = (wall, cpu, f.read())
                if runs["native"][2] != runs["traced"][2]:
                    fail("%s printed a different result under libchurn, %s" % (name, mode))
                ratios[mode].append((runs["traced"][0] / runs["native"][0],
                                     runs["traced"][1] / runs["native"][1]))
        for stale in glob.glob(trace + "*"):
            os.unlink(stale)
        found[name] = {mode: dict(rounds=rounds, wall=[w for w, _ in r], cpu=[c for _, c in r])
                       for mode, r in ratios.items()}
    return found


def report(facts, runs, quick, wls, data, analyzer, events, paired):
    out = []
    out.append("# libchurn benchmark results")
    out.append("")
    out.append("- date: %s" % facts["date"])
    out.append("- kernel (`uname -r`): %s" % facts["kernel"])
    out.append("- CPU: %s (%d logical CPUs)" % (facts["cpu"], facts["ncpu"]))
    out.append("- load average (1, 5, 15 min) at start: %s; at end: %s (other work on the "
               "machine shows up as wall time well above CPU time in native runs)"
               % (facts["load_start"], facts["load_end"]))
    out.append("- runs per mode: %d%s, alternating native / libchurn / libchurn-sampled "
               "(CHURN_STACK_SAMPLE=%s) / libchurn-noevents / libchurn-sample512k "
               "(CHURN_SAMPLE_BYTES=%s) / heaptrack within each round; figures are medians"
               % (runs, " (BENCH_QUICK)" if quick else "", SAMPLE, SAMPLE_BYTES))
    out.append("- sizes: " + ", ".join("%s %s" % (w["name"], w["size"]) for w in wls))
    out.append("")
    out.append("## Cost of tracing")
    out.append("")
    out.append("| workload | mode | wall s | CPU s | peak RSS MiB | wall x native | CPU x native "
               "| trace KiB | bytes/event | tracer-side RSS MiB |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w in wls:
        name = w["name"]
        native = data[name]["native"]
        for mode in MODES:
            runs_ = data[name][mode]
            wall_ratio = med([r["wall"] / n["wall"] for r, n in zip(runs_, native)])
            cpu_ratio = med([r["cpu"] / n["cpu"] if n["cpu"] > 0 else None
                             for r, n in zip(runs_, native)])
            trace_bytes = med([r["trace_bytes"] for r in runs_])
            ev = events[name].get("libchurn" if mode.startswith("libchurn") else mode)
            bpe = trace_bytes / ev if trace_bytes is not None and ev else None
            helper = med([r["helper_rss_kb"] for r in runs_])
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                name, mode, fmt(med([r["wall"] for r in runs_]), ".3f"),
                fmt(med([r["cpu"] for r in runs_]), ".3f"),
                fmt(med([r["rss_kb"] / 1024 for r in runs_]), ".1f"),
                "1" if mode == "native" else fmt(wall_ratio, ".2f"),
                "1" if mode == "native" else fmt(cpu_ratio, ".2f"),
                fmt(None if trace_bytes is None else trace_bytes / 1024, ".0f"),
                fmt(bpe, ".3f"),
                fmt(None if helper is None else helper / 1024, ".1f")))
    out.append("")
    out.append("## Alternated pairs against native, bench/python_churn.py")
    out.append("")
    out.append("Each interpreter, every stack (libchurn's defaults, PYTHONMALLOC=malloc) and "
               "CHURN_SAMPLE_BYTES=%s (the default allocator, pymalloc, traced through its "
               "hooks) each paired against a native run with the same allocator, the order "
               "turning every pair; medians of the pairs' own ratios, with their range."
               % SAMPLE_BYTES)
    out.append("")
    out.append("| interpreter | allocator | mode | rounds | pairs | wall x native | range "
               "| CPU x native | range |")
    out.append("|---|---|---|---:|---:|---:|---|---:|---|")
    allocators = {mode: allocator for mode, _, allocator in PAIRED_MODES}
    for name, modes in paired.items():
        for mode, r in modes.items():
            out.append("| %s | %s | %s | %d | %d | %s | %s to %s | %s | %s to %s |" % (
                name, allocators[mode], mode, r["rounds"], len(r["wall"]), fmt(med(r["wall"]), ".3f"),
                fmt(min(r["wall"]), ".2f"), fmt(max(r["wall"]), ".2f"),
                fmt(med(r["cpu"]), ".3f"), fmt(min(r["cpu"]), ".2f"),
                fmt(max(r["cpu"]), ".2f")))
    out.append("")
    out.append("## Allocation + free events per run (median)")
    out.append("")
    out.append("| workload | libchurn (churn-analyze --json totals) "
               "| heaptrack (+ and - records) |")
    out.append("|---|---:|---:|")
    for w in wls:
        ev = events[w["name"]]
        out.append("| %s | %s | %s |" % (w["name"], fmt(ev["libchurn"], ",.0f"),
                                       fmt(ev["heaptrack"], ",.0f")))
    out.append("")
    out.append("## Analyzer time on the same round's traces")
    out.append("")
    out.append("| workload | churn-analyze wall s | churn-analyze peak RSS MiB "
               "| heaptrack_print wall s | heaptrack_print peak RSS MiB "
               "| heaptrack_print / churn-analyze |")
    out.append("|---|---:|---:|---:|---:|---:|")
    for w in wls:
        a = analyzer[w["name"]]
        # the speed-up is the median of each round's own ratio, as the cost ratios are
        out.append("| %s | %s | %s | %s | %s | %s |" % (
            w["name"], fmt(med([r["wall"] for r in a["churn"]]), ".3f"),
            fmt(med([r["rss_kb"] / 1024 for r in a["churn"]]), ".1f"),
            fmt(med([r["wall"] for r in a["heaptrack"]]), ".3f"),
            fmt(med([r["rss_kb"] / 1024 for r in a["heaptrack"]]), ".1f"),
            fmt(med([h["wall"] / c["wall"] for c, h in zip(a["churn"], a["heaptrack"])]),
                ".2f")))
    out.append("")
    out.append("## Thread scaling (threads-2 against threads-1, same ops per thread)")
    out.append("")
    out.append("| mode | 1-thread Mops/s | 2-thread Mops/s | 2-thread / 1-thread throughput |")
    out.append("|---|---:|---:|---:|")
    ops1 = next(w["ops"] for w in wls if w["name"] == "threads-1")
    ops2 = next(w["ops"] for w in wls if w["name"] == "threads-2")
    for mode in MODES:
        one, two = data["threads-1"][mode], data["threads-2"][mode]
        out.append("| %s | %s | %s | %s |" % (
            mode, fmt(med([ops1 / r["wall"] / 1e6 for r in one]), ".2f"),
            fmt(med([ops2 / r["wall"] / 1e6 for r in two]), ".2f"),
            fmt(med([(ops2 / b["wall"]) / (ops1 / a["wall"]) for a, b in zip(one, two)]),
                ".2f")))
    out.append("")
    return "\n".join(out)


def write_figures(wls, data, events, paired):
    """The figures bench/bars.py judges the issue's bars by, next to the run's traces."""
    figures = {"paired_pythons": {name: {mode: {"wall_x_native": med(r["wall"]),
                                                "cpu_x_native": med(r["cpu"])}
                                         for mode, r in modes.items()}
                                  for name, modes in paired.items()}}
    for w in wls:
        name = w["name"]
        native = data[name]["native"]
        figures[name] = {
            "size": w["size"],
            "wall_x_native": {m: med([r["wall"] / n["wall"] for r, n in zip(data[name][m], native)])
                              for m in MODES if m != "native"},
            "bytes_per_event": (med([r["trace_bytes"] for r in data[name]["libchurn"]]) or 0)
                               / events[name]["libchurn"] if events[name]["libchurn"] else None,
        }
    with open(os.path.join(WORK, "figures.json"), "w") as f:
        json.dump(figures, f, indent=1)


def main():
    quick = os.environ.get("BENCH_QUICK") == "1"
    runs_env = os.environ.get("BENCH_RUNS")
    if runs_env is not None and (not runs_env.isdigit() or int(runs_env) < 1):
        fail("BENCH_RUNS must be a positive integer, got %r" % runs_env)
    runs = int(runs_env) if runs_env else (2 if quick else 5)
    if not NODE:
        fail("BENCH_NODE is not set: the pinned node comes from test/node/install.sh (run through `make bench`)")
    for path in (LIBCHURN, ANALYZER, MAXRSS_PRELOAD, THREADS, DETACH, PYTHON, NODE):
        if not os.path.exists(path):
            fail("missing %s (run through `make bench`)" % path)
    for tool in ("heaptrack", "heaptrack_print", "sqlite3", "zstd"):
        if not shutil.which(tool):
            fail("missing %s on PATH (run through `make bench`, which installs it)" % tool)
    become_subreaper()
    os.makedirs(WORK, exist_ok=True)
    load_start = load_average()
    wls = workloads(quick)
    data = {w["name"]: {m: [] for m in MODES} for w in wls}
    analyzer = {w["name"]: {"churn": [], "heaptrack": []} for w in wls}
    ev_runs = {w["name"]: {"libchurn": [], "heaptrack": []} for w in wls}

    # One untimed native run each, so the first timed round does not pay for a cold page cache.
    for w in wls:
        spawn(w["argv"], dict(clean_env(), **w["env"]), w["stdin"])
    for rnd in range(runs):
        for w in wls:
            name = w["name"]
            sys.stderr.write("bench: round %d/%d %s\n" % (rnd + 1, runs, name))
            res = {m: run_mode(w, m, rnd) for m in MODES}
            expect = result_line(res["native"]["lines"])
            for mode in MODES:
                if expect not in res[mode]["lines"]:
                    fail("%s under %s printed a different result than native (%r)"
                         % (name, mode, expect))
                data[name][mode].append(res[mode])
            churn_trace = res["libchurn"]["trace"]
            ht_trace = res["heaptrack"]["trace"]
            analyzer[name]["churn"].append(
                time_analyzer([ANALYZER, churn_trace], "%s.analyze.%d" % (name, rnd)))
            analyzer[name]["heaptrack"].append(
                time_analyzer([shutil.which("heaptrack_print"), "-f", ht_trace],
                              "%s.heaptrack_print.%d" % (name, rnd)))
            ev_runs[name]["libchurn"].append(churn_events(churn_trace))
            ev_runs[name]["heaptrack"].append(heaptrack_events(ht_trace))
            for r in res.values():
                if r["trace"]:
                    os.unlink(r["trace"])

    events = {w["name"]: {k: med(v) for k, v in ev_runs[w["name"]].items()} for w in wls}
    pairs_env = os.environ.get("BENCH_PAIRS")
    if pairs_env is not None and (not pairs_env.isdigit() or int(pairs_env) < 1):
        fail("BENCH_PAIRS must be a positive integer, got %r" % pairs_env)
    paired = python_pairs(quick, int(pairs_env) if pairs_env else (2 if quick else 10))
    facts = dict(machine_facts(), load_start=load_start, load_end=load_average())
    text = report(facts, runs, quick, wls, data, analyzer, events, paired)
    write_figures(wls, data, events, paired)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
