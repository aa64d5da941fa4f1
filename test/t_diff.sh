#!/bin/sh
# Two runs side by side: churn-analyze --diff OLD NEW (and churn analyze --diff) on one
# program before and after a fix (test/programs/leak_fix.c, leaking plain, fixed with
# -DFIXED; both built as leak_fix, in two directories).  The leaking function, remember(),
# comes first with its growth going from exactly 4000 bytes per epoch to 0 and its 60 live
# records to none, in the JSON, the text, the page and the folded stacks; the functions the
# fix did not touch are unchanged, and the live part of RSS growth drops by 4000 bytes per
# epoch.
. test/lib.sh

mkdir -p "$WORK/old" "$WORK/new"
build_c old/leak_fix test/programs/leak_fix.c
build_c new/leak_fix test/programs/leak_fix.c -DFIXED
traced "$WORK/old.zst" "$WORK/old.out" "$WORK/old/leak_fix"
traced "$WORK/new.zst" "$WORK/new.out" "$WORK/new/leak_fix"

run() { # NAME ARGS...: ARGS into NAME, which must succeed
    name=$1
    shift
    "$@" >"$WORK/$name" 2>"$WORK/$name.err" || fail "$* failed: $(tail -n 1 "$WORK/$name.err")"
}
run diff.json "$ANALYZE" --json --diff "$WORK/old.zst" "$WORK/new.zst"
run diff.txt "$ROOT/build/churn" analyze --diff "$WORK/old.zst" "$WORK/new.zst"
run diff.html "$ANALYZE" --html --diff "$WORK/old.zst" "$WORK/new.zst"
run diff.folded "$ANALYZE" --folded --diff "$WORK/old.zst" "$WORK/new.zst"
if grep -Eiq '(href|src)="?(https?:)?//' "$WORK/diff.html"; then
    fail "diff.html refers to the network"
fi
# bad usage: one line, status 2
for bad in "--diff $WORK/old.zst" "--diff $WORK/old.zst --tree $WORK/new.zst" \
    "--diff $WORK/old.zst --pprof -o $WORK/x $WORK/new.zst" \
    "--diff $WORK/old.zst --svg $WORK/new.zst"; do
    status=0
    # shellcheck disable=SC2086
    "$ANALYZE" $bad >/dev/null 2>"$WORK/bad.err" || status=$?
    [ $status = 2 ] && [ "$(wc -l <"$WORK/bad.err")" = 1 ] ||
        fail "churn-analyze $bad: status $status, stderr $(cat "$WORK/bad.err")"
done

check "$WORK" <<'PY'
import os, re, sys
from churncheck import *
from browser import Browser
work = sys.argv[1]
d = load(os.path.join(work, "diff.json"))
expect("old trace", field(d, "old", "trace"), os.path.join(work, "old.zst"))
expect("new trace", field(d, "new", "trace"), os.path.join(work, "new.zst"))
fns = field(d, "functions")
first = fns[0]
expect("first function", (first["function"], first["module"]), ("remember", "leak_fix"))
expect("remember before the fix",
       {k: first["old"][k] for k in ("bytes_per_epoch", "live_bytes", "live_count", "allocs",
                                     "alloc_bytes", "retention")},
       {"bytes_per_epoch": 4000, "live_bytes": 240000, "live_count": 60, "allocs": 60,
        "alloc_bytes": 240000, "retention": "leaked"})
expect("remember after the fix",
       {k: first["new"][k] for k in ("bytes_per_epoch", "live_bytes", "live_count", "allocs",
                                     "alloc_bytes", "retention")},
       {"bytes_per_epoch": 0, "live_bytes": 0, "live_count": 0, "allocs": 60,
        "alloc_bytes": 240000, "retention": "steady"})
expect("remember's change",
       {k: first["change"][k] for k in ("bytes_per_epoch", "live_bytes", "live_count", "allocs",
                                        "alloc_bytes")},
       {"bytes_per_epoch": -4000, "live_bytes": -240000, "live_count": -60, "allocs": 0,
        "alloc_bytes": 0})
for name, allocs in (("parse", 60), ("cache_put", 60)):
    rows = [f for f in fns if f["function"] == name]
    expect("rows of %s" % name, len(rows), 1)
    r = rows[0]
    expect("%s: allocs in both" % name, (r["old"]["allocs"], r["new"]["allocs"]), (allocs, allocs))
    if any(r["change"].values()):
        fail("%s changed: %s" % (name, r["change"]))
live = field(d, "rss_per_epoch", "live")
if abs(live["change"] + 4000) > 1:
    fail("the live part of RSS growth changed by %s B/epoch, not -4000: %s" % (live["change"], live))

txt = open(os.path.join(work, "diff.txt")).read().splitlines()
head = [i for i, l in enumerate(txt) if l.startswith("Functions")]
if not head:
    fail("the text has no functions table:\n" + "\n".join(txt[:30]))
rows = [l for l in txt[head[0] + 1:] if l.strip() and not l.lstrip().startswith(("growth", "old"))]
if not re.search(r"\+3\.9KiB\s+0B\s+-3\.9KiB\s+234\.4KiB\s+0B\s+-234\.4KiB\s+60\s+60\s+remember \(leak_fix\)$", rows[0]):
    fail("the text's first function row: %r" % rows[0])

folded = {}
for line in open(os.path.join(work, "diff.folded")):
    stack, old, new = line.rsplit(" ", 2)
    if stack.split(";")[-1].startswith("remember"):
        folded[stack] = (int(old), int(new))
expect("remember's live bytes in the folded stacks, old and new",
       tuple(map(sum, zip(*folded.values()))), (240000, 0))

b = Browser(1280, 900)
try:
    b.load(os.path.join(work, "diff.html"))
    cells = b.eval("Array.from(document.querySelectorAll('table.functions tr:nth-child(2) td'))"
                   ".map(td => td.textContent)")
    if not cells or "remember" not in cells[-1] or "+3.9KiB" not in cells or "0B" not in cells:
        fail("the page's first function row: %s" % cells)
finally:
    b.close()
print("--diff: remember first, 4000 B/epoch -> 0, 60 records -> 0; text, JSON, page, folded")
PY
