#!/bin/sh
# `make soak`: the demo workload (test/programs/request_loop.c, one epoch per request, in its
# steady mode: the same requests without the one-object leak, so the program's live set is
# flat) traced for a long time into a bounded ring (CHURN_RING_MB=64): 5,000,000 epochs with
# CHURN_EVENTS=0, then 1,000,000 epochs with every event; then 1,000,000 epochs of the leaking
# demo with every event, where libchurn's live map grows with the program's live objects.  Once a second the traced process's
# memory is sampled from /proc/PID/smaps: total RSS, the program's heap ([heap]) and the other
# anonymous mappings, which are libchurn's own (rings, live map, stack table, writer buffers;
# the demo is single-threaded and never maps memory itself) plus the writer thread's stack.
# Checked: the workload succeeds, the ring file never passes its bound, the analyzer reads
# the retained window.  Printed: start/middle/end memory, the largest file size seen, and
# the analyzer's wall time and peak RSS.  SOAK_NOEVENTS_EPOCHS / SOAK_EVENTS_EPOCHS change
# the lengths.  Figures are in docs/benchmarks.md (soak section).
set -eu
cd "$(dirname "$0")/.."
OUT=build/soak
RING_MB=64
mkdir -p "$OUT"

fail() {
    echo "soak: $*" >&2
    exit 1
}

# elapsed_s rss_kib heap_kib shim_kib of PID, one line.
sample() {
    awk -v t="$2" '
        /^[0-9a-f]+-[0-9a-f]+ / { kind = NF < 6 ? "anon" : ($6 == "[heap]" ? "heap" : "other") }
        /^Rss:/ { rss += $2; if (kind == "heap") heap += $2; else if (kind == "anon") anon += $2 }
        END { printf "%d %d %d %d\n", t, rss, heap, anon }' "/proc/$1/smaps" 2>/dev/null
}

row() {
    awk -v n="$2" 'NR == n { printf "%4ds  RSS %7.1f MiB  heap %7.1f MiB  libchurn %6.1f MiB\n", $1, $2 / 1024, $3 / 1024, $4 / 1024 }' "$1"
}

soak() {
    name=$1 epochs=$2 events=$3 mode=${4-steady}
    trace=$OUT/$name.zst samples=$OUT/$name.samples
    rm -f "$trace" "$samples"
    CHURN_OUT=$trace CHURN_EVENTS=$events CHURN_RING_MB=$RING_MB LD_PRELOAD=$PWD/build/libchurn.so \
        build/demo-workload "$epochs" $mode &
    pid=$!
    start=$(date +%s)
    max_file=0
    while kill -0 "$pid" 2>/dev/null; do
        now=$(($(date +%s) - start))
        sample "$pid" "$now" >>"$samples" || true
        size=$(stat -c %s "$trace" 2>/dev/null || echo 0)
        [ "$size" -gt "$max_file" ] && max_file=$size
        sleep 1
    done
    wait "$pid" || fail "$name: the workload failed under the shim"
    wall=$(($(date +%s) - start))
    size=$(stat -c %s "$trace")
    [ "$size" -gt "$max_file" ] && max_file=$size
    [ "$max_file" -le $((RING_MB << 20)) ] || fail "$name: the trace reached $max_file bytes, bound $RING_MB MiB"
    n=$(wc -l <"$samples")
    echo "== $name: $epochs epochs${mode:+ ($mode)}, CHURN_EVENTS=$events, CHURN_RING_MB=$RING_MB: $wall s traced"
    echo "   traced process (start, middle, end of $n one-second samples):"
    for r in 1 $(((n + 1) / 2)) "$n"; do
        printf '     '
        row "$samples" "$r"
    done
    echo "   trace file: largest $(awk -v b="$max_file" 'BEGIN { printf "%.1f", b / 1048576 }') MiB of the $RING_MB MiB bound"
    /usr/bin/time -f '%e %M' -o "$OUT/$name.time" build/churn-analyze --json "$trace" \
        >"$OUT/$name.json" || fail "$name: churn-analyze failed on the soak trace"
    read -r a_wall a_rss <"$OUT/$name.time"
    python3 - "$OUT/$name.json" "$a_wall" "$a_rss" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["metadata"]
print("   analyzer: %s s, peak RSS %.0f MiB; window epochs %s-%s, %d segments read, %d overwritten, exit %s"
      % (sys.argv[2], int(sys.argv[3]) / 1024, m["first_epoch"], m["last_epoch"],
         m["segments_used"], m["segments_dropped"], m["exit"]["how"]))
PY
}

make -s all build/demo-workload
soak noevents "${SOAK_NOEVENTS_EPOCHS:-5000000}" 0
soak events "${SOAK_EVENTS_EPOCHS:-1000000}" 1
soak leaking "${SOAK_EVENTS_EPOCHS:-1000000}" 1 ""
