#!/bin/sh
# Less to read (docs/analyzer.md, "Text report"): the rankings of the text report and the page
# leave out the rows that neither grow nor hold anything live nor retained anything, and say
# how many (the JSON keeps them); the epochs table comes after the rankings and the trends,
# with its telling rows only (the start, the most live bytes, the end) and a sparkline each of
# live bytes and RSS, every row with --all-epochs; who pins is one block; warnings alike but
# for their paths are one line.
#  - the demo workload (test/programs/request_loop.c): of its six functions only
#    remember_session grows or holds anything; the parked responses only ramp up in the first
#    eight requests, before the steady window;
#  - two stripped libraries (test/programs/nodebug_lib.c built twice, nodebug_main.c): two
#    warnings of a module without debug info, one line naming both.
. test/lib.sh

build_c request_loop test/programs/request_loop.c
for lib in a b; do
    gcc -O2 -fPIC -shared -s -DLIB_FN=${lib}_keep -o "$WORK/lib$lib.so" test/programs/nodebug_lib.c ||
        fail "cannot build lib$lib.so"
done
build_c nodebug_main test/programs/nodebug_main.c -L"$WORK" -la -lb -Wl,-rpath,"$WORK"
traced "$WORK/demo.zst" "$WORK/demo.out" "$WORK/request_loop" 200 2
traced "$WORK/libs.zst" "$WORK/libs.out" "$WORK/nodebug_main"
analyze "$WORK/demo.zst" "$WORK/demo.json"
analyze "$WORK/libs.zst" "$WORK/libs.json"
"$ANALYZE" "$WORK/demo.zst" >"$WORK/demo.txt" 2>&1 || fail "churn-analyze demo.zst failed"
"$ANALYZE" --all-epochs "$WORK/demo.zst" >"$WORK/demo.all.txt" 2>&1 || fail "churn-analyze --all-epochs failed"
"$ANALYZE" --html "$WORK/demo.zst" >"$WORK/demo.html" 2>&1 || fail "churn-analyze --html failed"
"$ANALYZE" "$WORK/libs.zst" >"$WORK/libs.txt" 2>&1 || fail "churn-analyze libs.zst failed"

check "$WORK" <<'PY'
import re, sys
from churncheck import *
W = sys.argv[1]
demo, text, all_text, page = (load(W + "/demo.json"), open(W + "/demo.txt").read(),
                              open(W + "/demo.all.txt").read(), open(W + "/demo.html").read())

# rankings: remember_session only; the five others are counted, and the JSON keeps them
ranked = text[text.index("Top functions by retained growth"):text.index("Top callsites by retained growth")]
rows = re.findall(r"^  #\d+ (\S+) ", ranked, re.M)
expect("demo: functions ranked in the text", rows, ["remember_session"])
if "(and 5 functions that neither grow nor hold anything live: --json lists them)" not in ranked:
    fail("demo: the text does not say how many functions it left out:\n%s" % ranked)
listed = {f["function"] for f in field(demo, "functions")}
for name in ("stash_response", "read_request_line", "parse_headers", "copy_route", "format_reply"):
    if name not in listed:
        fail("demo: the JSON no longer lists %s" % name)
table = page[page.index("<h2>Top functions"):page.index("<h2>Top callsites")]
if "stash_response" in table or "remember_session" not in table:
    fail("demo: the page ranks the functions that only churned, or not the leak")

# the epochs table after the rankings and the trends, its telling rows only
if not text.index("Top callsites by retained growth") < text.index("\nTrends") < text.index("\nEpochs ("):
    fail("demo: the epochs table does not come after the rankings and the trends")
lines = text[text.index("\nEpochs (") + 1:].split("\n\n")[0].splitlines()
labels = [l.split()[0] for l in lines[2:] if re.match(r"  (start|max live|end) ", l)]
expect("demo: the epochs table's rows", [l for l in labels], ["start", "max", "end"])
sparks = [l for l in lines if re.match(r"  (live B|rss) +[▁▂▃▄▅▆▇█]{40,}  \S+ \.\. \S+$", l)]
if len(sparks) != 2:
    fail("demo: no sparklines of live bytes and RSS:\n%s" % "\n".join(lines))
full = all_text[all_text.index("\nEpochs (") + 1:].split("\n\n")[0].splitlines()
if len([l for l in full if re.match(r" +\d+ +\d+ +\d+ ", l)]) != len(field(demo, "epochs")):
    fail("demo --all-epochs: not every epoch's row in the table")

# who pins: one block
if text.count("Who pins:") != 1 or "Callsites whose survivors pin" in text:
    fail("demo: not one block of who pins")

# two modules without debug info: one line
libs = open(W + "/libs.txt").read()
warned = [l for l in libs[libs.index("\nWarnings:"):].splitlines() if "no debug info" in l]
if len(warned) != 1 or not ("liba.so" in warned[0] and "libb.so" in warned[0]):
    fail("libs: the modules without debug info are not one line naming both: %r" % warned)
json_warned = [w for w in field(load(W + "/libs.json"), "warnings") if "no debug info" in w]
if len([w for w in json_warned if "/liba.so" in w or "/libb.so" in w]) != 2:
    fail("libs: the JSON does not keep each module's warning: %r" % json_warned)
print("demo: 1 function ranked, 5 left out; epochs: start, max live, end and two sparklines; "
      "libs: %s" % warned[0][:120])
PY
echo "ok: the text report and the page leave out rows that only churned, tell the epochs in three rows and fold warnings alike"
