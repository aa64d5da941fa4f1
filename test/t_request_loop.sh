#!/bin/sh
# The demo workload (test/programs/request_loop.c, 200 requests): the leak from
# remember_session must top the growth list at one 48-byte object per epoch and never be
# freed; the 4096-byte responses freed 8 requests later must land in the "8-15" lifetime
# bucket (all but the last 8, freed at shutdown at ages 0..7); temporaries die in "same".
. test/lib.sh

build_c request_loop test/programs/request_loop.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/request_loop" 200
analyze "$WORK/trace.zst" "$WORK/report.json"

check "$WORK/report.json" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
requests = 200
growth = field(report, "growth")
if not growth:
    fail("growth list is empty")
top = growth[0]
stack = field(top, "stack")
if not stack or not stack[0].startswith("remember_session"):
    fail("top growth entry is not remember_session: stack %s" % stack[:3])
if "request_loop.c:" not in stack[0]:
    fail("remember_session frame has no file:line: %r" % stack[0])
expect("leak bytes_per_epoch", round(field(top, "bytes_per_epoch"), 3), 48)
expect("leak count_per_epoch", round(field(top, "count_per_epoch"), 3), 1)
if not field(top, "r2") >= 0.99:
    fail("leak r2 %r < 0.99" % top["r2"])
expect("leak allocs", field(top, "allocs"), requests)
expect("leak frees", field(top, "frees"), 0)
expect("leak live_count", field(top, "live_count"), requests)
expect("leak live_bytes", field(top, "live_bytes"), 48 * requests)
lifetime = field(top, "lifetime")
expect("leak lifetime buckets", {k: v for k, v in lifetime.items() if v}, {"never": requests})

delayed = [g for g in growth if g["stack"] and g["stack"][0].startswith("stash_response")]
expect("growth entries for stash_response", len(delayed), 1)
d = delayed[0]
expect("stash_response allocs", field(d, "allocs"), requests)
expect("stash_response frees", field(d, "frees"), requests)
expect("stash_response alloc_bytes", field(d, "alloc_bytes"), 4096 * requests)
buckets = {k: v for k, v in field(d, "lifetime").items() if v}
expect("stash_response lifetime buckets", buckets,
       {"8-15": requests - 8, "4-7": 4, "2-3": 2, "1": 1, "same": 1})

temp_functions = ("read_request_line", "parse_headers", "format_reply", "copy_route")
for name in temp_functions:
    entries = [g for g in growth if any(name in f for f in g["stack"][:3])]
    if not entries:
        fail("no growth entry for temporaries of %s" % name)
    for g in entries:
        buckets = {k: v for k, v in g["lifetime"].items() if v}
        expect("%s lifetime buckets" % name, buckets, {"same": g["allocs"]})
        expect("%s frees" % name, g["frees"], g["allocs"])

totals = field(report, "totals")
if totals["allocs"] < 8 * requests:
    fail("totals.allocs %d < %d made by the requests" % (totals["allocs"], 8 * requests))
leaked = field(report, "leaked_at_exit")
if leaked["count"] < requests or leaked["bytes"] < 48 * requests:
    fail("leaked_at_exit %r misses the %d sessions" % (leaked, requests))
print("leak on top: %r per epoch, r2 %.4f" % (top["bytes_per_epoch"], top["r2"]))
PY

# The text report's live-vs-fragmented rows: the last epoch, which the exit closes, carries no
# reading of the allocator's books of its own, and its missing free-resident figure says why;
# without it what glibc keeps free cannot be told from what is outside the heap, so neither
# column has a figure and the row says the two together (RSS - live set's spans - libchurn's);
# when earlier epochs were read (the same requests 5 ms apart, as `make demo` serves them),
# the last of them is shown above it with its free-resident figure.
EXIT_ROW='^  (last|exit) +200 +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +- +- +[^ ]+ +[^ ]+  books not read \(closed at the exit\): free-res and outside [0-9.]+[KMG]?i? together$'
"$ANALYZE" "$WORK/trace.zst" >"$WORK/report.txt" 2>"$WORK/report.err" || fail "text report failed"
grep -Eq "$EXIT_ROW" "$WORK/report.txt" ||
    fail "the exit's row does not say its books were not read: $(grep -E '^  (last|exit) ' "$WORK/report.txt")"
traced "$WORK/paced.zst" "$WORK/paced.out" "$WORK/request_loop" 200 5
"$ANALYZE" "$WORK/paced.zst" >"$WORK/paced.txt" 2>"$WORK/paced.err" || fail "text report failed"
grep -Eq "$(echo "$EXIT_ROW" | sed 's/(last|exit)/exit/')" "$WORK/paced.txt" ||
    fail "paced: no exit row whose books were not read: $(grep -E '^  (last|exit) ' "$WORK/paced.txt")"
analyze "$WORK/paced.zst" "$WORK/paced.json"
check "$WORK/paced.json" <<'PY'
import sys
from churncheck import *
rows = field(load(sys.argv[1]), "fragmentation")
last, read = rows[-1], [r for r in rows if r["free_resident_bytes"] is not None]
expect("paced: the exit's row, outside_with_free", last["outside_with_free"], True)
if not read or any(r["outside_with_free"] for r in read):
    fail("paced: rows with books read say outside_with_free: %r"
         % [(r["epoch"], r["outside_with_free"]) for r in read][:5])
expect("paced: the exit's outside = rss - span - unplaced - libchurn",
       last["outside_heap_bytes"],
       last["rss_bytes"] - last["span_bytes"] - last["unplaced_bytes"] - last["libchurn_bytes"])
print("paced: %d rows with books, outside apart; the exit's, free and outside %d B together"
      % (len(read), last["outside_heap_bytes"]))
PY
last=$(grep -E '^  last +[0-9]+ ' "$WORK/paced.txt") || fail "paced: no last row above the exit's"
echo "$last" | awk '{ exit !($2 < 200 && $7 ~ /[0-9]/ && NF == 10) }' ||
    fail "paced: the last row is not an earlier epoch with a free-resident figure: $last"
# Nothing warns of memory not traced; the verdict's part of RSS growth that nothing traced
# explains stays under a page per epoch (it lists the part, whatever its size).
sed '/^Verdict:$/,/^Steady window:/d' "$WORK/paced.txt" | grep -q "not traced" &&
    fail "paced: the report speaks of memory not traced: $(grep 'not traced' "$WORK/paced.txt")"
check "$WORK/paced.json" <<'PY'
import sys
from churncheck import *
untraced = field(load(sys.argv[1]), "verdict", "parts", "not_traced")
if untraced > 4096:
    fail("paced: the verdict has %.0f B per epoch not traced" % untraced)
PY
echo "paced: $last"
