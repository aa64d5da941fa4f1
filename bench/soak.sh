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
# the analyzer's wall time, peak RSS and --json size.  Then the analyzer's bars (issue 20,
# docs/benchmarks.md), each with its figure, PASS or MISS: the 5,000,000-epoch trace in at
# most 256 MiB and 10 s with a default --json of at most 20 MB, and the 20,000-subrequest
# workerd trace (test/workerd/, traced as t_workerd does; SOAK_WORKERD=0 leaves it out) in at
# most 128 MiB.  SOAK_NOEVENTS_EPOCHS / SOAK_EVENTS_EPOCHS change the lengths (the bars
# are for the defaults).  Figures are in docs/benchmarks.md (soak section).
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
    analyzer "$name" "$trace"
    python3 - "$OUT/$name.json" "$a_wall" "$a_rss" "$a_json" "$a_cpu" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m, e = r["metadata"], r["epoch_rows"]
print("   analyzer: %s s (%s s CPU), peak RSS %.0f MiB, --json %.1f MB; window epochs %s-%s in "
      "%d rows of %d, %d segments read, %d overwritten, exit %s"
      % (sys.argv[2], sys.argv[5], int(sys.argv[3]) / 1024, int(sys.argv[4]) / 1e6,
         m["first_epoch"], m["last_epoch"], e["rows"], e["width"], m["segments_used"],
         m["segments_dropped"], m["exit"]["how"]))
PY
}

# analyzer NAME TRACE: churn-analyze --json under /usr/bin/time; sets a_wall (s), a_cpu (user
# + system s: the wall time on a shared machine is loose), a_rss (KiB) and a_json (bytes of
# the report).
analyzer() {
    /usr/bin/time -f '%e %M %U %S' -o "$OUT/$1.time" build/churn-analyze --json "$2" \
        >"$OUT/$1.json" || fail "$1: churn-analyze failed on the trace"
    read -r a_wall a_rss a_user a_sys <"$OUT/$1.time"
    a_cpu=$(awk -v u="$a_user" -v s="$a_sys" 'BEGIN { printf "%.2f", u + s }')
    a_json=$(stat -c %s "$OUT/$1.json")
}

BARS=$OUT/bars
: >"$BARS"
# bar WHAT FIGURE LIMIT UNIT: one line, PASS when FIGURE <= LIMIT.
bar() {
    awk -v what="$1" -v v="$2" -v lim="$3" -v unit="$4" 'BEGIN {
        printf "   %-58s %10.1f %-4s (bar <= %s %s)  %s\n", what, v, unit, lim, unit,
               v <= lim ? "PASS" : "MISS" }' >>"$BARS"
}

make -s all build/demo-workload
soak noevents "${SOAK_NOEVENTS_EPOCHS:-5000000}" 0
bar "analyzer on the ${SOAK_NOEVENTS_EPOCHS:-5000000}-epoch trace: wall" "$a_wall" 10 s
bar "analyzer on the ${SOAK_NOEVENTS_EPOCHS:-5000000}-epoch trace: peak RSS" \
    "$(awk -v k="$a_rss" 'BEGIN { print k / 1024 }')" 256 MiB
bar "analyzer on the ${SOAK_NOEVENTS_EPOCHS:-5000000}-epoch trace: --json size" \
    "$(awk -v b="$a_json" 'BEGIN { print b / 1e6 }')" 20 MB
soak events "${SOAK_EVENTS_EPOCHS:-1000000}" 1
soak leaking "${SOAK_EVENTS_EPOCHS:-1000000}" 1 ""

if [ "${SOAK_WORKERD:-1}" != 0 ]; then
    workerd=$(test/workerd/install.sh) || fail "cannot install workerd (SOAK_WORKERD=0 skips it)"
    rm -f "$OUT/workerd.zst"
    python3 test/workerd/drive.py --workerd "$workerd" --subrequests 20000 --per-request 100 \
        --log "$OUT/workerd.log" --env "LD_PRELOAD=$PWD/build/libchurn.so" \
        --env "CHURN_OUT=$PWD/$OUT/workerd.zst" --env "CHURN_EPOCH_AT=workerd::IoContext::IoContext" \
        >"$OUT/workerd.drive.json" || fail "workerd failed under the shim: $(tail -n 1 "$OUT/workerd.log")"
    analyzer workerd "$OUT/workerd.zst"
    echo "== workerd, 20,000 subrequests: trace $(stat -c %s "$OUT/workerd.zst") bytes; analyzer $a_wall s ($a_cpu s CPU), peak RSS $((a_rss / 1024)) MiB"
    bar "analyzer on the 20,000-subrequest workerd trace: peak RSS" \
        "$(awk -v k="$a_rss" 'BEGIN { print k / 1024 }')" 128 MiB
fi

echo "== bars (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores)"
cat "$BARS"
