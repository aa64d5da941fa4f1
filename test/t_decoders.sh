#!/bin/sh
# The analyzer's two ways of decoding events agree (analyzer/read/records.c): the build with its
# shortcuts (build/churn-analyze) and the one without them (build/slow/churn-analyze,
# CHURN_DECODE_SLOW) print the same bytes, the same warnings and the same exit status, in the
# JSON report, the text report and an epoch window, on real traces (the demo workload, a
# ring that wrapped, threads under each allocator, peak_temp's temporaries), on synthetic
# event streams that take every way out of the shortcut (more live objects than the recent
# table holds, frees of older epochs, thread switches, full chunks), on the same streams
# with garbage in the middle of their events, and on the fuzzer's seed corpus.
. test/lib.sh

SLOW=$ROOT/build/slow/churn-analyze
[ -x "$SLOW" ] || fail "build/slow/churn-analyze is missing: run make slow"
mkdir -p "$WORK/traces"

make -s build/demo-workload || fail "cannot build the demo workload"
traced "$WORK/traces/demo.zst" "$WORK/demo.out" build/demo-workload 3000
CHURN_SEGMENT_KB=64 CHURN_RING_MB=1 traced "$WORK/traces/ring.zst" "$WORK/ring.out" \
    build/demo-workload 40000
build_c threads test/programs/threads.c -pthread
for allocator in $ALLOCATORS; do
    use_allocator "$allocator"
    traced "$WORK/traces/threads.$allocator.zst" "$WORK/threads.$allocator.out" "$WORK/threads"
done
use_allocator glibc
build_c peak_temp test/programs/peak_temp.c
traced "$WORK/traces/peak_temp.zst" "$WORK/peak_temp.out" "$WORK/peak_temp"
cp test/fuzz/corpus/* "$WORK/traces/"

python3 - "$WORK/traces" <<'PY'
import os, random, sys
sys.path.insert(0, "test/tools")
import mktrace
out = sys.argv[1]
RECENT = 16384   # CHURN_RECENT_ALLOCS (analyzer/read/records.h)

def stream(seed, nseg, events, keep):
    """Segments of random allocations and frees on three threads; about `keep` objects
    stay live, so that beyond RECENT the frees reach past the recent table."""
    rng = random.Random(seed)
    live, segs, epoch = [], [], 0
    for s in range(nseg):
        recs = mktrace.prelude(s, epoch) + [["stack", k, [0x1000 * k, 0x10]] for k in range(1, 40)]
        recs += [["thread", 1], ["epoch", epoch]]
        for i in range(events):
            r = rng.random()
            if r < 0.002:
                epoch += 1
                recs.append(["epoch", epoch])
            elif r < 0.004:
                recs.append(["thread", rng.randrange(1, 4)])
                recs.append(["epoch", epoch])
            elif live and (len(live) > keep or r < 0.45):
                a, size, slack, stack, born = live.pop(rng.randrange(len(live)) if rng.random() < 0.3 else -1)
                recs.append(["free", rng.randrange(0, 3), a, size, slack, stack, epoch - born])
            else:
                a = 0x10000000 + rng.randrange(1 << 24) * 16
                if any(x[0] == a for x in live[-8:]):
                    continue
                size = rng.choice((8, 16, 24, 32, 48, 100, 4000, rng.randrange(1, 1 << 20)))
                slack, stack = rng.choice((0, 8)), rng.randrange(1, 40)
                live.append((a, size, slack, stack, epoch))
                recs.append(["alloc", rng.randrange(0, 3), a, size, slack, stack])
        recs.append(["epoch_end", {"epoch": epoch}])
        segs.append({"seq": s, "first_epoch": 0, "last_epoch": epoch, "records": recs})
    segs[-1]["records"].append(["exit", 1, 0])
    return {"segments": segs}

def write(name, desc):
    open(os.path.join(out, name), "wb").write(mktrace.build(desc))

write("few_live", stream(1, 2, 60000, 50))
write("many_live", stream(2, 1, 3 * RECENT, 2 * RECENT))
# garbage in the middle of a segment's events, after a valid part: both decoders must stop
# at the same record, with the same warning and the same figures up to there
rng = random.Random(3)
for k in range(12):
    desc = stream(10 + k, 2, 3000, 200)
    recs = desc["segments"][k % 2]["records"]
    at = rng.randrange(60, len(recs))
    recs.insert(at, ["raw", bytes(rng.randrange(256) for _ in range(rng.randrange(1, 12))).hex()])
    write("garbage.%02d" % k, desc)
PY

compare() {
    name=$1
    shift
    fs=0
    ss=0
    # Both read debug info, never a cache the other filled: the report says where names came
    # from (debug_info), and a cache would make that differ where the decoders do not.
    CHURN_SYMBOL_CACHE=off "$ANALYZE" "$@" >"$WORK/fast.out" 2>"$WORK/fast.err" || fs=$?
    CHURN_SYMBOL_CACHE=off "$SLOW" "$@" >"$WORK/slow.out" 2>"$WORK/slow.err" || ss=$?
    [ "$fs" -eq "$ss" ] || fail "$name ($*): exit $fs with the shortcuts, $ss without"
    cmp -s "$WORK/fast.out" "$WORK/slow.out" ||
        fail "$name ($*): the reports differ: $(diff "$WORK/fast.out" "$WORK/slow.out" | sed -n 2p)"
    cmp -s "$WORK/fast.err" "$WORK/slow.err" ||
        fail "$name ($*): the messages differ: $(diff "$WORK/fast.err" "$WORK/slow.err" | sed -n 2p)"
}

n=0
warned=0
for t in "$WORK"/traces/*; do
    name=$(basename "$t")
    compare "$name" --json "$t"
    grep -q 'malformed record' "$WORK/fast.out" && warned=$((warned + 1))
    compare "$name" "$t"
    compare "$name" --json --epochs 1:3 "$t"
    n=$((n + 1))
done
# the garbage cases are read up to the damage, not refused whole: most end in a warning
[ "$warned" -ge 6 ] || fail "only $warned traces warn of a malformed record: the garbage is not where it should be"
echo "$n traces: the same reports with and without the decoding shortcuts ($warned with a malformed record)"
