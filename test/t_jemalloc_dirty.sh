#!/bin/sh
# jemalloc's free but resident memory in the RSS split is its dirty pages
# (stats.arenas.4096.pdirty x arenas.page), to the byte, not resident - active - metadata
# (metadata counts jemalloc's internal allocations, which active holds too): a program with
# jemalloc preloaded frees most of 200 large and 20,000 small blocks, ends epoch 0 while its
# heap stays quiet, and prints jemalloc's figures once the writer has read them.  The residual
# is then the rest of resident: metadata's pages and active pages no live object occupies.
. test/lib.sh

[ -f "$JEMALLOC" ] || fail "$JEMALLOC missing: apt-get install libjemalloc-dev"
build_c je_dirty test/programs/je_dirty.c -ldl
CHURN_PRELOAD_EXTRA=$JEMALLOC traced "$WORK/je.zst" "$WORK/je.out" "$WORK/je_dirty"
analyze "$WORK/je.zst" "$WORK/je.json"
check "$WORK/je.json" "$WORK/je.out" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
words = open(sys.argv[2]).read().split()
je = dict(zip(words[0::2], map(int, words[1::2])))
expect("books", field(report, "fragmentation_model", "books"), "jemalloc")
row = [r for r in field(report, "fragmentation") if r["epoch"] == 0][0]
expect("epoch 0 counters fresh", row["books_stale"], False)
expect("epoch 0: libchurn's stats.arenas.4096.pdirty", row["counters"]["stats.arenas.4096.pdirty"], je["pdirty"])
expect("epoch 0: heap = stats.resident", row["heap_bytes"], je["resident"])
if je["pdirty"] < 100:
    fail("the program left only %d dirty pages: no test of the figure" % je["pdirty"])
expect("epoch 0: free resident = dirty pages", row["free_resident_bytes"], je["pdirty"] * je["page"])
old = je["resident"] - je["active"] - je["metadata"]
if old == je["pdirty"] * je["page"]:
    fail("resident - active - metadata equals the dirty bytes here: the test cannot tell them apart")
expect("epoch 0: residual", row["residual_bytes"],
       je["resident"] - row["span_bytes"] - je["pdirty"] * je["page"])
print("dirty %d B (resident - active - metadata would say %d B), residual %d B"
      % (row["free_resident_bytes"], old, row["residual_bytes"]))
PY
