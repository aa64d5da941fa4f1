"""Compares libchurn's figures with the referee's and logs heaptrack's beside them
(test/t_referee.sh).

usage: compare.py WORK PROGRAM...

For each PROGRAM (and each forked child, matched by order of pid), WORK holds:
  PROGRAM.json              churn-analyze --json of the libchurn run (PROGRAM.<pid>.json for
                            a child);
  PROGRAM.ref.N.json        the referee's runs (PROGRAM.ref.N.json.<pid> for a child);
  PROGRAM.ht.txt            heaptrack's decompressed data file (the parent only: heaptrack
                            does not follow fork).

A figure on which every referee run agrees must equal libchurn's exactly.  A figure that
varies among the referee's runs (the order of threads' events decides temporaries and the
peak) passes when libchurn's value lies within the referee's range widened by its own width
on each side; the log states the range.  A peak libchurn labels an estimate (threads
interleaved within an epoch: "exact": false) must bound every referee run's peak bytes
between its "lower" and "upper".  heaptrack's figures are computed from its data file
by heaptrack_print's own rules (src/analyze/accumulatedtracedata.cpp): a free is temporary
when its allocation info (size and stack) has the index of the last allocation's, and that
index is 0 both for "a free came last" and for the first allocation info, so a free of the
first info's blocks right after another free counts too; its peak is the high-water mark of
its leaked bytes.  They are logged, not compared with the referee; the allocation calls and
temporaries computed here must be what heaptrack_print itself prints (PROGRAM.ht.print), so
the table's heaptrack column is heaptrack's own.
"""

import glob
import json
import os
import sys

FIGURES = [
    ("allocs", ("totals", "allocs"), ("allocs",)),
    ("frees", ("totals", "frees"), ("frees",)),
    ("alloc_bytes", ("totals", "alloc_bytes"), ("alloc_bytes",)),
    ("temporary", ("totals", "temporary"), ("temporary",)),
    ("peak_bytes", ("peak", "bytes"), ("peak", "bytes")),
    ("peak_count", ("peak", "count"), ("peak", "count")),
    ("live_count", ("leaked_at_exit", "count"), ("live_at_exit", "count")),
    ("live_bytes", ("leaked_at_exit", "bytes"), ("live_at_exit", "bytes")),
]


# Figures our programs have by construction (their header comments say why), which every
# referee run must report: the referee is checked too, not only trusted.
KNOWN = {
    "ref_temporary": {"allocs": 2500, "frees": 2500, "temporary": 1500, "peak_bytes": 96,
                      "peak_count": 2, "live_count": 0, "live_bytes": 0},
    "ref_inline": {"temporary": 4011, "live_count": 3, "live_bytes": 624},
    "ref_realloc": {"allocs": 3907, "frees": 3900, "live_count": 7, "live_bytes": 4210},
    "ref_fork": {"live_count": 8, "live_bytes": 556},
    "ref_fork (child 1)": {"live_count": 9, "live_bytes": 1323},
    "ref_fork (child 2)": {"live_count": 15, "live_bytes": 2685},
}


def dig(obj, path):
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


def load(path):
    with open(path) as f:
        return json.load(f)


def heaptrack_figures(path):
    """allocs, frees, temporaries, peak and leaked as heaptrack_print computes them."""
    if not os.path.exists(path):
        return {}
    sizes = []
    allocs = frees = temporary = leaked = live = peak = peak_count = 0
    total_bytes = 0
    last = 0
    with open(path, errors="replace") as f:
        for line in f:
            mode = line[:1]
            if mode == "a":
                sizes.append(int(line.split()[1], 16))
            elif mode == "+":
                index = int(line.split()[1], 16)
                allocs += 1
                live += 1
                leaked += sizes[index]
                total_bytes += sizes[index]
                if leaked > peak:
                    peak, peak_count = leaked, live
                last = index
            elif mode == "-":
                index = int(line.split()[1], 16)
                frees += 1
                live -= 1
                leaked -= sizes[index]
                if last == index:
                    temporary += 1
                last = 0
    return {"allocs": allocs, "frees": frees, "alloc_bytes": total_bytes,
            "temporary": temporary, "peak_bytes": peak, "peak_count": peak_count,
            "live_count": live, "live_bytes": leaked}


def heaptrack_printed(path):
    """The allocation calls and temporaries of heaptrack_print's summary."""
    found = {}
    if os.path.exists(path):
        with open(path, errors="replace") as f:
            for line in f:
                for label, text in (("allocs", "calls to allocation functions: "),
                                    ("temporary", "temporary memory allocations: ")):
                    if line.startswith(text):
                        found[label] = int(line[len(text):].split()[0])
    return found


def children(pattern, prefix):
    """{rank: path} of a run's forked children's files, ranked by pid."""
    found = []
    for path in glob.glob(pattern):
        tail = path[len(prefix):]
        if tail.isdigit():
            found.append((int(tail), path))
    return [p for _, p in sorted(found)]


def main():
    work, programs = sys.argv[1], sys.argv[2:]
    failures = []
    rows = []
    for program in programs:
        base = os.path.join(work, program)
        churn_files = [base + ".json"] + [
            p for p in sorted(glob.glob(base + ".[0-9]*.json"),
                              key=lambda p: int(p[len(base) + 1:-5]))]
        runs = sorted(glob.glob(base + ".ref.[0-9]*.json"))
        if not runs:
            failures.append("%s: no referee run" % program)
            continue
        ref_runs = []
        for run in runs:
            ref_runs.append([run] + children(run + ".*", run + "."))
        processes = len(churn_files)
        for r in ref_runs:
            if len(r) != processes:
                failures.append("%s: libchurn wrote %d trace(s), the referee %d report(s) in %s"
                                % (program, processes, len(r), r[0]))
                processes = min(processes, len(r))
        ht = heaptrack_figures(base + ".ht.txt")
        printed = heaptrack_printed(base + ".ht.print")
        for label in ("allocs", "temporary"):
            if printed.get(label) != ht.get(label):
                failures.append("%s: heaptrack_print says %s %s, its data file %s"
                                % (program, label, printed.get(label), ht.get(label)))
        for k in range(processes):
            name = program if k == 0 else "%s (child %d)" % (program, k)
            churn = load(churn_files[k])
            refs = [load(r[k]) for r in ref_runs]
            for label, churn_path, ref_path in FIGURES:
                got = dig(churn, churn_path)
                values = [dig(r, ref_path) for r in refs]
                known = KNOWN.get(name, {}).get(label)
                if known is not None and any(v != known for v in values):
                    failures.append("%s: the referee says %s %s, the program makes %d"
                                    % (name, label, values, known))
                lo, hi = min(values), max(values)
                want = str(lo) if lo == hi else "%d..%d" % (lo, hi)
                spread = hi - lo
                heap = ht.get(label, "") if k == 0 else ""
                if got is None:
                    verdict = "MISSING"
                    failures.append("%s: churn-analyze's JSON has no %s (referee %s)"
                                    % (name, ".".join(churn_path), want))
                elif label.startswith("peak_") and dig(churn, ("peak", "exact")) is False:
                    # libchurn says its peak is an estimate (threads interleaved within an
                    # epoch) and bounds the process's bytes: every referee run must lie within
                    # the bounds, and the estimate too.
                    bound = (dig(churn, ("peak", "lower")), dig(churn, ("peak", "upper")))
                    inside = label == "peak_count" or all(
                        bound[0] <= v <= bound[1] for v in values + [got])
                    verdict = "ok (estimate, %d..%d)" % bound if inside else "OUTSIDE"
                    if not inside:
                        failures.append("%s: %s referee %s outside libchurn's bounds %d..%d"
                                        % (name, label, want, bound[0], bound[1]))
                elif lo - spread <= got <= hi + spread:
                    verdict = "ok" if lo == hi else "ok (varies)"
                else:
                    verdict = "DIFFERS"
                    failures.append("%s: %s libchurn %d, referee %s" % (name, label, got, want))
                rows.append((name, label, "-" if got is None else str(got), want, str(heap),
                             verdict))
    widths = [max(len(r[i]) for r in rows + [("program", "figure", "libchurn", "referee",
                                                "heaptrack", "")]) for i in range(6)]
    header = ("program", "figure", "libchurn", "referee", "heaptrack", "")
    for row in [header] + rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    print("referee runs per program: %s" % ", ".join(
        "%s %d" % (p, len(glob.glob(os.path.join(work, p) + ".ref.[0-9]*.json")))
        for p in programs))
    if failures:
        # figures that differ first, then those the analyzer does not have
        failures.sort(key=lambda f: "JSON has no" in f)
        for f in failures:
            print("mismatch: " + f)
        print("FAIL: %d figure(s) differ between libchurn and the referee: %s"
              % (len(failures), "; ".join(failures[:6])))
        sys.exit(1)
    print("every figure of %d programs matches the referee" % len(programs))


if __name__ == "__main__":
    main()
