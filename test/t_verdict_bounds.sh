#!/bin/sh
# The verdict says how sure it is (docs/analyzer.md, "The verdict"): every slope it states has
# its bound, half the width of the 95 % confidence interval of the least-squares slope (t with
# n - 2 degrees of freedom times its standard error), carried in the JSON; a slope whose bound
# covers zero is said not to grow or shrink measurably, and a function that does not measurably
# grow is not named as holding the growth.
#  - synthetic, noisy: 36 epochs whose live bytes and RSS scatter around flat lines (a fixed
#    seed); their least-squares slopes are far from zero (RSS -3.3 KiB per epoch) but within
#    their bounds: the verdict says RSS does not measurably grow or shrink and names no
#    function; every bound in the JSON is the one recomputed here from the series;
#  - synthetic, a leak in the noise: 64 B per epoch under the same scatter, and RSS growing
#    16 KiB per epoch: the verdict says "about", names the leak with a bound that covers 64,
#    and RSS grows;
#  - python3, a real run of 35 epochs (ctypes' churn_epoch_begin) that builds and drops the same
#    data each epoch: whatever its slopes, no sentence claims a direction its bound does not
#    support (RSS, each part named as the largest other one, each function named).
# decoders: fast and slow
. test/lib.sh

# mk NAME LEAK RSS_SLOPE: 36 epochs of noise (and a leak of LEAK bytes per epoch) into
# $WORK/NAME.zst, the series fitted into $WORK/NAME.series
mk() {
    python3 - "$WORK/$1" "$2" "$3" <<'PY'
import json, random, sys
sys.path.insert(0, "test/tools")
import mktrace
out, leak, rss_slope = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
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

mk noisy 0 0
mk leaky 64 16384
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
for name in noisy leaky py; do
    analyze "$WORK/$name.zst" "$WORK/$name.json"
    "$ANALYZE" "$WORK/$name.zst" >"$WORK/$name.txt" 2>&1 || fail "churn-analyze $name.zst failed"
done

check "$WORK" <<'PY'
import json, math, re, sys
from churncheck import *
work = sys.argv[1]
# Student's t at 97.5 % for the degrees of freedom these windows have
T975 = {25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 31: 2.039513,
        32: 2.036933, 33: 2.034515, 34: 2.032245}

def fit(points):
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    slope = sxy / sxx
    res = sum((y - my - slope * (x - mx)) ** 2 for x, y in points)
    return slope, T975[n - 2] * math.sqrt(res / (n - 2) / sxx)

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
for name in ("noisy", "leaky"):
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
    if name == "noisy":
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
