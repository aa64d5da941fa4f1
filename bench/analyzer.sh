#!/bin/sh
# churn-analyze against heaptrack_print on the same Python run: both traces are produced
# here, then each analyzer reads its own trace in 9 alternating runs (the machine may be
# shared: the median of more runs moves less); the median wall time and peak RSS of each are
# printed side by side.  churn-analyze runs twice per round: cold (symbol cache off: libc's
# debug info is read every time) and warm (a symbol cache filled by an earlier run; heaptrack
# resolves symbols while tracing, so its printer reads none).  Usage: sh bench/analyzer.sh [ROUNDS]
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${1:-40000}
WORK=${TMPDIR:-/tmp}/churn-bench-analyzer
mkdir -p "$WORK"
command -v heaptrack >/dev/null || { echo "heaptrack missing: apt-get install heaptrack" >&2; exit 1; }
[ -x build/churn-analyze ] && [ -f build/libchurn.so ] || { echo "run make first" >&2; exit 1; }

export PYTHONMALLOC=malloc PYTHONHASHSEED=0
rm -f "$WORK/py.zst" "$WORK/hp.zst"
CHURN_OUT="$WORK/py.zst" LD_PRELOAD="$PWD/build/libchurn.so" \
    /usr/bin/python3 bench/python_churn.py "$ROUNDS" >/dev/null
heaptrack -o "$WORK/hp" /usr/bin/python3 bench/python_churn.py "$ROUNDS" >/dev/null 2>&1
[ -f "$WORK/hp.zst" ] || { echo "heaptrack wrote no $WORK/hp.zst" >&2; exit 1; }

exec python3 - "$WORK/py.zst" "$WORK/hp.zst" <<'PY'
import os, statistics, sys, time

def run(argv):
    devnull = os.open(os.devnull, os.O_WRONLY)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execvp(argv[0], argv)
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - start
    os.close(devnull)
    if status != 0:
        sys.exit("%s failed (status %d)" % (argv[0], status))
    return wall, usage.ru_maxrss / 1024.0

cache = os.path.join(os.path.dirname(sys.argv[1]), "symbol-cache")
tools = {"churn-analyze cold": ["env", "CHURN_SYMBOL_CACHE=off", "build/churn-analyze", sys.argv[1]],
         "churn-analyze warm": ["env", "CHURN_SYMBOL_CACHE=" + cache, "build/churn-analyze", sys.argv[1]],
         "heaptrack_print": ["heaptrack_print", sys.argv[2]]}
run(tools["churn-analyze warm"])  # fills the cache
results = {name: [] for name in tools}
for _ in range(9):
    for name, argv in tools.items():
        results[name].append(run(argv))
print("%-20s %10s %12s" % ("analyzer", "wall s", "peak RSS MiB"))
med = {}
for name, rs in results.items():
    med[name] = (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs))
    print("%-20s %10.3f %12.1f" % (name, med[name][0], med[name][1]))
# Each round's own ratio, then their median: the runs of a round share the machine's
# moment, as make bench pairs its modes.
for mode in ("cold", "warm"):
    ratios = [h[0] / c[0] for c, h in zip(results["churn-analyze " + mode], results["heaptrack_print"])]
    print("speed ratio (heaptrack_print / churn-analyze %s): %.2fx (median of %d rounds' ratios; "
          "ratio of the medians %.2fx)" % (mode, statistics.median(ratios), len(ratios),
                                            med["heaptrack_print"][0] / med["churn-analyze " + mode][0]))
PY
