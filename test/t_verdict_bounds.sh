#!/bin/sh
# The verdict says how sure it is (docs/analyzer.md, "The verdict"): every slope it states has
# its bound, half the width of the 95 % confidence interval of the least-squares slope (t with
# n - 2 degrees of freedom times its standard error, widened when the residuals go in runs),
# carried in the JSON; a slope whose bound
# covers zero is said not to grow or shrink measurably, and a function that does not measurably
# grow is not named as holding the growth.
#  - synthetic, noisy: 36 epochs whose live bytes and RSS scatter around flat lines (a fixed
#    seed); their least-squares slopes are far from zero (RSS -3.3 KiB per epoch) but within
#    their bounds: the verdict says RSS does not measurably grow or shrink and names no
#    function; every bound in the JSON is the one recomputed here from the series;
#  - synthetic, RSS that wanders (each reading moves from the one before): the residuals go in
#    runs, and the bound recomputed here widens for them as the analyzer's does;
#  - synthetic, a leak in the noise: 64 B per epoch under the same scatter, and RSS growing
#    16 KiB per epoch: the verdict says "about", names the leak with a bound that covers 64,
#    and RSS grows;
#  - python3, a real run of 35 epochs (ctypes' churn_epoch_begin) that builds and drops the same
#    data each epoch: whatever its slopes, no sentence claims a direction its bound does not
#    support (RSS, each part named as the largest other one, each function named).
# decoders: fast and slow
. test/lib.sh

# mk NAME LEAK RSS_SLOPE scatter|walk: 36 epochs of noise (and a leak of LEAK bytes per epoch) into
# $WORK/NAME.zst, the series fitted into $WORK/NAME.series
mk() {
    python3 - "$WORK/$1" "$2" "$3" "$4" <<'PY'
import json, random, sys
sys.path.insert(0, "test/tools")
import mktrace
out, leak, rss_slope, walk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "walk"
rng = random.Random(39)
recs = mktrace.prelude(0, 0) + [["stack", 7, [0x1010]], ["thread", 1]]
live, addr, series = {}, [0x100000], {"live": {}, "rss": {}}

def alloc(e, size, stack):
    addr[0] += 0x1000
    live[addr[0]] = (size, stack, e)
    recs.append(["alloc", 0, addr[0], size, 0, stack])

def free(e, a):
    size, stack, born = live.pop(a)
    recs.append(["free_full", 0, a, size, 0, stack, e - born])

epochs = 37
noise = [rng.randint(0, 40) for _ in range(epochs)]
jitter = [rng.randint(-64, 64) * 4096 for _ in range(epochs)]
if walk:  # RSS that wanders: each epoch's reading moves from the one before
    for e in range(1, epochs):
        jitter[e] = jitter[e - 1] + jitter[e] // 4
for e in range(epochs):
    recs.append(["epoch", e])
    for a in [a for a, (size, _, _) in live.items() if size == 48]:
        free(e, a)
    if e < epochs - 1:
        for _ in range(noise[e]):  # held for one epoch, by the leak's own stack
            alloc(e, 48, 7)
        if leak:
            alloc(e, leak, 7)
    else:  # the exit's epoch
        for a in list(live):
            free(e, a)
    lb = sum(s for s, _, _ in live.values())
    rss = (16 << 20) + rss_slope * e + jitter[e]
    series["live"][e], series["rss"][e] = lb, rss
    recs.append(["epoch_end", {"epoch": e, "wall_ns": 1000000, "rss": rss,
                               "live_count": len(live), "live_bytes": lb}])
recs.append(["exit", 1, 0])
open(out + ".zst", "wb").write(mktrace.build(
    {"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": epochs - 1, "records": recs}]}))
json.dump(series, open(out + ".series", "w"))
PY
}

mk noisy 0 0 scatter
mk leaky 64 16384 scatter
mk walk 0 0 walk
cat >"$WORK/flat.py" <<'FLAT'
import ctypes, json, time
begin = ctypes.CDLL(None).churn_epoch_begin
for i in range(35):
    begin()
    d = [{"k": str(j), "v": [j] * 8} for j in range(3000)]
    s = json.dumps(d)
    del d, s
    time.sleep(0.02)
FLAT
CHURN_OUT="$WORK/py.zst" LD_PRELOAD="$SHIM" /usr/bin/python3 "$WORK/flat.py" >"$WORK/py.out" \
    2>"$WORK/py.err" || fail "python3 failed under the shim: $(tail -n 1 "$WORK/py.err")"
for name in noisy leaky walk py; do
    analyze "$WORK/$name.zst" "$WORK/$name.json"
    "$ANALYZE" "$WORK/$name.zst" >"$WORK/$name.txt" 2>&1 || fail "churn-analyze $name.zst failed"
done

check "$WORK" <<'PY'
import json, math, re, sys
from churncheck import *
work = sys.argv[1]
# Student's t at 97.5 %: a table to 30 degrees of freedom, the normal quantile's expansion
# above (a fraction of a degree rounds down)
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]

def t975(df):
    if df < 30:
        return T975[max(int(df), 1) - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2) + \
        (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3)

def fit(points):
    """The least-squares slope and its bound: t times the standard error, both widened when
    the residuals go in runs (lag-1 autocorrelation rho > 0, counted at most 0.5:
    n (1 - rho) / (1 + rho) points)."""
    points = sorted(points)
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    e = [y - my - slope * (x - mx) for x, y in points]
    se2 = sum(r * r for r in e) / (n - 2) / sxx
    rho = sum(a * b for a, b in zip(e, e[1:])) / sum(r * r for r in e)
    if rho > 0:
        rho = min(rho, 0.5)
        se2 *= (1 + rho) / (1 - rho)
        n = max(3, n * (1 - rho) / (1 + rho))
    return slope, t975(n - 2) * math.sqrt(se2)

def close(a, b, within=1e-6):
    return abs(a - b) <= within * max(1, abs(b))

def report(name):
    r = load("%s/%s.json" % (work, name))
    v = field(r, "verdict")
    text = open("%s/%s.txt" % (work, name)).read()
    for s in field(v, "sentences"):
        if s not in text:
            fail("%s: the text report lacks the verdict's %r" % (name, s))
    expect("%s: the bounds' confidence" % name, field(v, "confidence"), 0.95)
    return r, v

def consistent(name, v):
    """No sentence claims a direction its bound does not support."""
    s = field(v, "sentences")
    if any(x.startswith("about") for x in s):
        fail("%s: a sentence opens in lower case: %r" % (name, s))
    rss, bound = field(v, "rss_bytes_per_epoch"), field(v, "rss_bytes_per_epoch_bound")
    covered = bound is not None and abs(rss) <= bound
    expect("%s: rss_direction" % name, field(v, "rss_direction"),
           "none" if covered else "shrinks" if rss < 0 else "grows")
    if covered != ("does not measurably grow or shrink" in s[0]):
        fail("%s: RSS %+.0f +-%s B per epoch, and the verdict says %r" % (name, rss, bound, s[0]))
    if covered and re.search(r"RSS (grows|shrinks)", s[0]):
        fail("%s: a direction the bound does not support: %r" % (name, s[0]))
    for f in field(v, "functions"):
        b = f["bytes_per_epoch_bound"]
        if b is None or f["bytes_per_epoch"] <= b:
            fail("%s: %s named holding %+.1f +-%s B per epoch" % (name, f["function"],
                                                                 f["bytes_per_epoch"], b))
    keys = {"libchurn's own memory": "libchurn", "not traced": "not_traced",
            "pinned in partly used spans": "pinned", "slack": "slack",
            "allocator's overhead": "allocator_overhead", "own mmap calls": "program_mmap",
            "free memory the allocator keeps": "free_resident"}
    parts, bounds = field(v, "parts"), field(v, "bounds")
    for s3 in s[2:3]:
        for words, key in keys.items():
            if words in s3 and bounds[key] is not None and parts[key] <= bounds[key]:
                fail("%s: %r names %s, %+.0f +-%.0f B per epoch" % (name, s3, key, parts[key],
                                                                   bounds[key]))

# noise only: the slopes are the series', the bounds cover zero, no function is named
for name in ("noisy", "leaky", "walk"):
    r, v = report(name)
    consistent(name, v)
    series = json.load(open("%s/%s.series" % (work, name)))
    w = field(v, "window")
    for key, part in (("live", "live"), ("rss", "rss")):
        points = [(int(e), y) for e, y in series[key].items() if w["first"] <= int(e) <= w["last"]]
        slope, bound = fit(points)
        got = field(v, "rss_bytes_per_epoch") if part == "rss" else field(v, "parts", "live")
        gotb = field(v, "rss_bytes_per_epoch_bound") if part == "rss" else field(v, "bounds", "live")
        if not close(got, slope) or not close(gotb, bound, 1e-3):
            fail("%s: %s %r +-%r per epoch over %r, recomputed %r +-%r"
                 % (name, key, got, gotb, w, slope, bound))
    if name == "walk":
        points = sorted((int(e), y) for e, y in series["rss"].items()
                        if w["first"] <= int(e) <= w["last"])
        n = len(points)
        mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
        b = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
        e = [y - my - b * (x - mx) for x, y in points]
        rho = sum(p * q for p, q in zip(e, e[1:])) / sum(r * r for r in e)
        if rho < 0.3:
            fail("walk: the RSS residuals' lag-1 autocorrelation is %.2f: no runs to widen for" % rho)
        print("walk (rho %.2f): %s" % (rho, v["sentences"][0]))
    elif name == "noisy":
        rss, bound = v["rss_bytes_per_epoch"], v["rss_bytes_per_epoch_bound"]
        if abs(rss) < 2048 or abs(rss) > bound:
            fail("noisy: RSS %+.0f +-%.0f per epoch: this seed should give a slope of at least "
                 "2 KiB inside its bound" % (rss, bound))
        if field(v, "functions"):
            fail("noisy: functions named for noise: %r" % v["functions"])
        if "No function's live bytes measurably grow" not in v["sentences"][1]:
            fail("noisy: %r" % v["sentences"][1])
        print("noisy: %s" % v["sentences"][0])
    else:
        f = field(v, "functions")[0]
        if abs(f["bytes_per_epoch"] - 64) > f["bytes_per_epoch_bound"] or \
                not 0 < f["bytes_per_epoch_bound"] < 64:
            fail("leaky: the leak %r +-%r B per epoch, not a bound of 64" %
                 (f["bytes_per_epoch"], f["bytes_per_epoch_bound"]))
        if not re.search(r"holds about \+\d+B \+-\d+B per epoch", v["sentences"][1]):
            fail("leaky: the leak's bound is not said: %r" % v["sentences"][1])
        if not re.match(r"RSS grows about [\d.]+KiB \+-[\d.]+KiB per epoch over epochs \d+\.\.\d+ "
                        r"\(95% bounds\)", v["sentences"][0]):
            fail("leaky: %r" % v["sentences"][0])
        print("leaky: %s %s" % (v["sentences"][0], v["sentences"][1]))

# python3: a real short run, every claim within its bound
r, v = report("py")
if field(v, "window", "last") - field(v, "window", "first") > 40:
    fail("python3: the window %r is not a short run" % v["window"])
consistent("python3", v)
for key, b in field(v, "bounds").items():
    if b is not None and b < 0:
        fail("python3: bound %s %r" % (key, b))
print("python3: %s" % " ".join(v["sentences"][:2]))
PY
echo "ok: the verdict's slopes carry their bounds, and no direction is claimed that a bound does not support"
