#!/bin/sh
# A program's own allocation wrappers are not its allocating functions
# (test/programs/wrapper_alloc.c): grow_table's objects come through xmalloc and name_copy's
# through xstrdup and xmalloc, and the function rows are grow_table via xmalloc and name_copy
# via xstrdup with their exact counts; no row is a wrapper.  JSON, text and page agree.
. test/lib.sh

build_c wrapper_alloc test/programs/wrapper_alloc.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/wrapper_alloc"
analyze "$WORK/trace.zst" "$WORK/report.json"
"$ANALYZE" "$WORK/trace.zst" >"$WORK/report.txt" 2>&1 || fail "churn-analyze text report failed"
"$ANALYZE" --html "$WORK/trace.zst" -o "$WORK/report.html" 2>"$WORK/html.err" ||
    fail "churn-analyze --html failed: $(tail -n 1 "$WORK/html.err")"

check "$WORK/report.json" "$WORK/report.txt" "$WORK/report.html" <<'PY'
import sys
from churncheck import *
report, text, html = load(sys.argv[1]), open(sys.argv[2]).read(), open(sys.argv[3]).read()
rows = {f["function"]: f for f in field(report, "functions")}
for w in ("xmalloc", "xstrdup"):
    if w in rows:
        fail("the wrapper %s is a function row" % w)
for name, via, size in (("grow_table", "xmalloc", 48), ("name_copy", "xstrdup", 15)):
    if name not in rows:
        fail("no function row for %s: rows %s" % (name, sorted(rows)))
    f = rows[name]
    expect("%s via" % name, (field(f, "via"), field(f, "via_others")), (via, False))
    expect("%s allocs" % name, field(f, "allocs"), 50)
    expect("%s live" % name, (field(f, "live_count"), field(f, "live_bytes")), (50, 50 * size))
    expect("%s retention" % name, field(f, "retention"), "leaked")
    if ("%s (wrapper_alloc) via %s: " % (name, via)) not in text:
        fail("the text report's row does not say %s via %s" % (name, via))
    if ("%s (wrapper_alloc) via %s</td>" % (name, via)) not in html:
        fail("the page's row does not say %s via %s" % (name, via))
print("grow_table via xmalloc, name_copy via xstrdup: 50 objects each")
PY
