#!/bin/sh
# CHURN_SAMPLE_BYTES (shim/record/sample.c): the demo workload (request_loop, 20,000 requests) and the
# known-pattern programs retention.c and functions.c, each traced in full and sampled at
# N = 4 KiB and 512 KiB.  Sampled: the program prints the same; the totals and every epoch's
# allocations, frees and bytes allocated equal the full trace's; every callsite's and
# function's estimated growth per epoch is within 4 of its stated standard errors of the
# full trace's (a callsite without samples estimates 0), the standard error being the larger
# of the stated one and the one of a sample at the full trace's true rate (a row with a few
# samples, as Poisson counts go, can state a bound that its true rate exceeds); where the
# true rate gives 20 samples or more, the stated bound is within a factor of 2 of that one;
# only sampled allocations are in the
# trace, and no free of an unsampled object (it would be an unknown free); the reports
# say which figures are estimates, and so do the page and the exports.  Then the exit paths
# of t_exit_paths (exit, _exit, a fatal SIGSEGV, thread-specific-data destructors) and a
# fork, each with its epochs' counts exact and its exit record.  (Every run's environment holds a CHURN_SAMPLE_BYTES value of
# the same length, so the programs' own allocations are the same in all three.)
. test/lib.sh

build_c request_loop test/programs/request_loop.c
build_c retention test/programs/retention.c
build_c functions test/programs/functions.c

for prog in request_loop retention functions; do
    args=
    [ $prog = request_loop ] && args=20000
    for n in 0000000 0004096 0524288; do
        # shellcheck disable=SC2086
        CHURN_SAMPLE_BYTES=$n traced "$WORK/$prog.$n.zst" "$WORK/$prog.$n.out" "$WORK/$prog" $args
        analyze "$WORK/$prog.$n.zst" "$WORK/$prog.$n.json"
        [ $n = 0000000 ] && continue
        "$ANALYZE" "$WORK/$prog.$n.zst" >"$WORK/$prog.$n.txt" 2>&1 ||
            fail "churn-analyze text report of $prog at $n failed"
        cmp -s "$WORK/$prog.0000000.out" "$WORK/$prog.$n.out" ||
            fail "$prog printed something else with CHURN_SAMPLE_BYTES=$n"
    done
    check "$prog" "$WORK/$prog" <<'PY'
import math, os, sys
from churncheck import *
prog, base = sys.argv[1], sys.argv[2]
full = load(base + ".0000000.json")
ft = field(full, "totals")
fepochs = {e["epoch"]: e for e in field(full, "epochs")}
# the epochs the growth is fitted over (the rows of a long run group several epochs each)
last = max(e.get("last_epoch", e["epoch"]) for e in fepochs.values())
span = max(1, last - min(fepochs))

def true_se(g, n):
    """The growth estimate's standard error at the full trace's true rate: a sample of an
    object of s bytes, taken with probability 1 - exp(-s/N), stands for w = s / p bytes; the
    row gains k = |g| span / w samples, whose least-squares slope varies by
    w sqrt(1.2 (k + 1)) / span (the analyzer's model, fed the truth instead of the sample)."""
    size = g["alloc_bytes"] / max(1, g["allocs"])
    w = size / -math.expm1(-size / n) if size > 0 else n
    k = abs(g["bytes_per_epoch"]) * span / w
    return w * math.sqrt(1.2 * (k + 1)) / span, k
for n in ("0004096", "0524288"):
    s = load("%s.%s.json" % (base, n))
    label = "%s at CHURN_SAMPLE_BYTES=%d" % (prog, int(n))
    expect(label + ": metadata.sample_bytes", field(s, "metadata", "sample_bytes"), int(n))
    st = field(s, "totals")
    for k in ("allocs", "alloc_bytes"):
        expect(label + ": totals." + k, st[k], ft[k])
    expect(label + ": totals.frees", st["frees"], ft["frees"] + ft["unknown_frees"])
    expect(label + ": unknown frees recorded", st["unknown_frees"], 0)
    sepochs = {e["epoch"]: e for e in field(s, "epochs")}
    expect(label + ": epochs", sorted(sepochs), sorted(fepochs))
    for e, fe in fepochs.items():
        for k in ("allocs", "frees", "alloc_bytes"):
            if sepochs[e][k] != fe[k]:
                fail("%s: epoch %d %s %d, the full trace's %d" % (label, e, k, sepochs[e][k], fe[k]))
    worst, calibrated = 0.0, 0
    for what, key in (("growth", lambda g: tuple(g["stack"])), ("functions", lambda g: g["function"])):
        rows = {key(g): g for g in field(s, what)}
        for g in field(full, what):
            est = rows.get(key(g))
            if est is not None:
                value, se = est["bytes_per_epoch"], est["estimate"]["bytes_per_epoch_se"]
            else:
                # no sample: the estimate is 0, with the bound of a row that did not grow
                value, se = 0.0, int(n) * 1.2 ** 0.5 / span
            if not se > 0:
                fail("%s: %s row %s has no standard error" % (label, what, key(g)))
            tse, k = true_se(g, int(n))
            if est is not None and k >= 20:
                if not 0.5 <= se / tse <= 2:
                    fail("%s: %s row %s states +- %.2f B/epoch, its true rate's %.2f (%.0f samples)"
                         % (label, what, str(key(g))[:120], se, tse, k))
                calibrated += 1
            z = abs(value - g["bytes_per_epoch"]) / max(se, tse)
            if z > 4:
                fail("%s: %s row %s grows %.2f B/epoch +- %.2f (%.2f at its true rate), the full trace %.2f"
                     % (label, what, str(key(g))[:120], value, se, tse, g["bytes_per_epoch"]))
            worst = max(worst, z)
    # only the sampled allocations are in the trace (and their frees: an unsampled object's
    # free would be an unknown free, above)
    samples = sum(g["estimate"]["samples"] for g in field(s, "growth"))
    if not samples < st["allocs"] / (2 if n == "0004096" else 20) or (prog == "request_loop" and not samples):
        fail("%s: %d sampled allocations of %d" % (label, samples, st["allocs"]))
    if n == "0524288" and not os.path.getsize("%s.%s.zst" % (base, n)) < os.path.getsize(base + ".0000000.zst"):
        fail("%s: the sampled trace is not smaller than the full one" % label)
    text = open("%s.%s.txt" % (base, n)).read()
    for phrase in ("allocations sampled: one sample per %d bytes" % int(n), "Totals (exact):",
                   "Live at end (estimate)"):
        if phrase not in text:
            fail("%s: the text report lacks %r" % (label, phrase))
    if samples and "B/epoch from " not in text:
        fail("%s: the text report gives no callsite's standard error" % label)
    print("%s: totals and epochs exact, every growth within %.1f standard errors; %d rows with 20 "
          "samples or more state a bound within 2x of their true rate's" % (label, worst, calibrated))
PY
done

# Every page and export of a sampled trace says that its figures are estimates.
Z=$WORK/request_loop.0004096.zst
"$ANALYZE" --html "$Z" -o "$WORK/page.html" >/dev/null 2>&1 || fail "--html of a sampled trace failed"
"$ANALYZE" --svg "$Z" >"$WORK/flame.svg" 2>/dev/null || fail "--svg of a sampled trace failed"
"$ANALYZE" --folded "$Z" >"$WORK/folded" 2>"$WORK/folded.err" || fail "--folded of a sampled trace failed"
"$ANALYZE" --pprof "$Z" -o "$WORK/profile.pb.gz" >/dev/null 2>&1 || fail "--pprof of a sampled trace failed"
grep -q "Sampled trace: estimates from a sample of the allocations, one per 4096 bytes" "$WORK/page.html" ||
    fail "the page of a sampled trace does not say its figures are estimates"
grep -q "estimates from a sample of the allocations" "$WORK/flame.svg" ||
    fail "the flame graph of a sampled trace does not say its figures are estimates"
grep -q "note: the folded figures are estimates" "$WORK/folded.err" ||
    fail "--folded of a sampled trace does not say its figures are estimates"
[ -s "$WORK/folded" ] || fail "--folded of a sampled trace is empty"
gzip -dc "$WORK/profile.pb.gz" | grep -aq "estimates from a sample of the allocations" ||
    fail "the pprof profile of a sampled trace does not say its figures are estimates"

# Exit paths, sampled: the counts of the work epoch are exact and the trace ends as the
# process did.
build_c endings test/programs/endings.c
for mode in exit _exit segv; do
    status=0
    CHURN_SAMPLE_BYTES=4096 CHURN_OUT="$WORK/$mode.zst" LD_PRELOAD="$SHIM" "$WORK/endings" $mode \
        >"$WORK/$mode.out" 2>"$WORK/$mode.err" || status=$?
    case $mode in
    exit) want=3 how=normal detail=3 ;;
    _exit) want=4 how=_exit detail=4 ;;
    segv) want=139 how=signal detail=11 ;;
    esac
    [ "$status" -eq "$want" ] || fail "endings $mode exited with status $status sampled, not $want"
    analyze "$WORK/$mode.zst" "$WORK/$mode.json"
    check "$WORK/$mode.json" "$WORK/$mode.out" "$mode" "$how" "$detail" <<'PY'
import sys
from churncheck import *
report, ph, mode, how, detail = load(sys.argv[1]), phases(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
row = [e for e in field(report, "epochs") if e["epoch"] == ph["work"]][0]
expect("sampled %s: work epoch allocs, frees, bytes" % mode,
       (row["allocs"], row["frees"], row["alloc_bytes"]), (17, 0, 17 * 700))
expect("sampled %s: exit how" % mode, field(report, "metadata", "exit", "how"), how)
expect("sampled %s: exit detail" % mode, field(report, "metadata", "exit", "detail"), detail)
print("sampled %s: work epoch exact, trace ends with %s %d" % (mode, how, detail))
PY
done

# fork: the parent's and each child's trace count what each process did, as in full.
build_c fork test/programs/fork.c
for n in 0000000 0004096; do
    mkdir -p "$WORK/fork.$n"
    CHURN_SAMPLE_BYTES=$n traced "$WORK/fork.$n/t.zst" "$WORK/fork.$n.out" "$WORK/fork" "$WORK/fork.$n"
    for f in "$WORK/fork.$n"/*.zst; do
        analyze "$f" "$f.json"
    done
done
check "$WORK/fork.0000000" "$WORK/fork.0004096" <<'PY'
import glob, sys
from churncheck import *
def counts(d):
    return sorted([(e["epoch"], e["allocs"], e["frees"], e["alloc_bytes"]) for e in field(load(f), "epochs")]
                  for f in glob.glob(d + "/*.zst.json"))
full, sampled = counts(sys.argv[1]), counts(sys.argv[2])
expect("traces of the forked tree", len(sampled), 3)
expect("sampled fork: every process's epochs (allocs, frees, bytes)", sampled, full)
print("sampled fork: parent and children count exactly what they did")
PY

build_c tls_dtor test/programs/tls_dtor.c -pthread
CHURN_SAMPLE_BYTES=4096 traced "$WORK/tls.zst" "$WORK/tls.out" "$WORK/tls_dtor"
analyze "$WORK/tls.zst" "$WORK/tls.json"
check "$WORK/tls.json" "$WORK/tls.out" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])
count, nbytes = [int(w) for w in open(sys.argv[2]).read().split("expect ")[1].split()]
row = [e for e in field(report, "epochs") if e["epoch"] == ph["work"]][0]
expect("sampled: threads exiting through key destructors", (row["allocs"], row["frees"],
       row["alloc_bytes"]), (count, count, nbytes))
expect("sampled: unknown frees", field(report, "totals", "unknown_frees"), 0)
print("sampled: every allocation and free of threads ending through key destructors counted")
PY
