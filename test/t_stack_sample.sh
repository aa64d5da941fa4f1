#!/bin/sh
# CHURN_STACK_SAMPLE=10 (test/programs/stack_sample.c): every allocation is still counted
# exactly, one in about ten has its stack, and churn-analyze scales callsites by ten.  The
# loop's ten temporaries come in a fixed order, so each of their callsites getting its share
# shows the gaps between walks are random; the kept objects' estimate shows the scaling, with
# events and with epoch summaries only.
. test/lib.sh

build_c stack_sample test/programs/stack_sample.c
for mode in events summaries; do
    events=1
    [ "$mode" = summaries ] && events=0
    CHURN_STACK_SAMPLE=10 CHURN_EVENTS=$events \
        traced "$WORK/$mode.zst" "$WORK/$mode.out" "$WORK/stack_sample"
    analyze "$WORK/$mode.zst" "$WORK/$mode.json"
done
traced "$WORK/every.zst" "$WORK/every.out" "$WORK/stack_sample"
analyze "$WORK/every.zst" "$WORK/every.json"
"$ANALYZE" "$WORK/events.zst" >"$WORK/events.txt" || fail "churn-analyze (text) failed"
"$ANALYZE" --folded=allocs "$WORK/events.zst" >"$WORK/events.folded" ||
    fail "churn-analyze --folded=allocs failed"
grep -q "stacks sampled: one allocation in 10 " "$WORK/events.txt" ||
    fail "the text report does not say that stacks were sampled"
check "$WORK" <<'PY'
import sys
from churncheck import *
work = sys.argv[1]
TURNS, TEMPS = 40000, 10

def site(report, function):
    found = growth_with(report, function)
    if len(found) != 1:
        fail("%d callsites name %s" % (len(found), function))
    return found[0]

for mode in ("events", "summaries", "every"):
    report = load("%s/%s.json" % (work, mode))
    ph = phases("%s/%s.out" % (work, mode))
    rate = 1 if mode == "every" else 10
    expect("%s: stack_sample" % mode, field(report, "metadata", "stack_sample"), rate)
    expect_epoch(report, ph["work"], "work", allocs=TURNS * (TEMPS + 1), frees=TURNS * TEMPS)
    if any(g["stack_id"] == 0 for g in field(report, "growth")) and rate > 1:
        fail("%s: allocations without a stack form a callsite" % mode)
    kept = site(report, "keep_one")
    if kept["live_count"] % rate:
        fail("%s: keep_one's live count %d is not a multiple of the rate %d"
             % (mode, kept["live_count"], rate))
    if rate == 1:
        expect("every: keep_one live", kept["live_count"], TURNS)
    elif abs(kept["live_count"] - TURNS) > TURNS * 0.08:
        fail("%s: keep_one's live count estimated %d, kept %d" % (mode, kept["live_count"], TURNS))
    temps = [site(report, "temp%d" % n)["allocs"] for n in range(TEMPS)]
    for n, allocs in enumerate(temps):
        if abs(allocs - TURNS) > TURNS * 0.12:
            fail("%s: temp%d estimated %d allocations of %d (all callsites: %s)"
                 % (mode, n, allocs, TURNS, temps))
    if mode == "events":
        # the flame graph's weights are the report's estimates, not the sampled counts
        folded = {}
        for line in open("%s/events.folded" % work):
            frames, value = line.rsplit(" ", 1)
            folded[frames.split(";")[-1]] = folded.get(frames.split(";")[-1], 0) + int(value)
        for function, want in [("keep_one", kept["allocs"])] + [
                ("temp%d" % n, temps[n]) for n in range(TEMPS)]:
            expect("folded allocs of %s" % function, folded.get(function), want)
    print("%s: 1 in %d; keep_one live %d of %d; temporaries %d..%d of %d each"
          % (mode, rate, kept["live_count"], TURNS, min(temps), max(temps), TURNS))
PY
