#!/bin/sh
# The verdict (docs/analyzer.md, "The verdict"): three to six sentences first in the text
# report (right after the header), first on the page, and in the JSON (`verdict`): how much RSS
# grows per epoch over the steady window and what it is made of, each part in bytes per
# epoch; the functions that hold the growth, with type, retention and share; the next step.
# Every figure a sentence gives is one the JSON's verdict carries.
#  - the demo workload (test/programs/request_loop.c): remember_session leaks 48 B a request,
#    all of the live growth; the parked responses, which only ramp up during the first eight
#    requests, are not named;
#  - a C++ program (test/programs/cxx_types.cc): the functions named carry their types;
#  - a run of one epoch (test/programs/raw_mmap.c without epochs): the next step is an
#    epoch source;
#  - a JS engine's own heap (test/programs/pool_alloc.c built as V8's stand-in, growing 40 MiB
#    in its own mapping): the page's first words name V8's own heap, with a heap snapshot as
#    the next step.
. test/lib.sh

build_c request_loop test/programs/request_loop.c
build_cxx cxx_types test/programs/cxx_types.cc
build_c raw_mmap test/programs/raw_mmap.c
build_c pool_v8 test/programs/pool_alloc.c -DENGINE_V8
traced "$WORK/demo.zst" "$WORK/demo.out" "$WORK/request_loop" 200 2
traced "$WORK/cxx.zst" "$WORK/cxx.out" "$WORK/cxx_types"
traced "$WORK/one.zst" "$WORK/one.out" "$WORK/raw_mmap" libc 2
traced "$WORK/v8.zst" "$WORK/v8.out" "$WORK/pool_v8"
"$ANALYZE" --html "$WORK/v8.zst" >"$WORK/v8.html" 2>&1 || fail "churn-analyze --html v8.zst failed"
for name in demo cxx one; do
    analyze "$WORK/$name.zst" "$WORK/$name.json"
    "$ANALYZE" "$WORK/$name.zst" >"$WORK/$name.txt" 2>&1 || fail "churn-analyze $name.zst failed"
done
"$ANALYZE" --html "$WORK/demo.zst" >"$WORK/demo.html" 2>&1 || fail "churn-analyze --html failed"
# the window a reader would pick by hand: past the eight requests that fill the parked ring
analyze "$WORK/demo.zst" "$WORK/demo.window.json" --epochs 8:199
analyze "$WORK/demo.zst" "$WORK/demo.cut.json" --epochs 8:150

check "$WORK/demo.json" "$WORK/demo.txt" "$WORK/demo.html" \
    "$WORK/cxx.json" "$WORK/cxx.txt" "$WORK/one.json" "$WORK/one.txt" "$WORK/v8.html" \
    "$WORK/demo.window.json" "$WORK/demo.cut.json" <<'PY'
import html, re, sys
from churncheck import *

def binary(v):
    m, u = abs(v), 0
    while m >= 1024 and u < 5:
        m /= 1024
        u += 1
    s = ("%.0f" % m) if u == 0 else ("%.1f%s" % (m, ["", "Ki", "Mi", "Gi", "Ti", "Pi"][u]))
    return ("-" if v < 0 and s.strip("0.") else "") + s

def numbers(obj):
    if isinstance(obj, bool):
        return
    if isinstance(obj, (int, float)):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from numbers(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from numbers(v)

def verdict_of(name, report, text):
    v = field(report, "verdict")
    sentences = field(v, "sentences")
    if not 3 <= len(sentences) <= 6:
        fail("%s: %d sentences in the verdict: %r" % (name, len(sentences), sentences))
    lines = text.splitlines()
    # the header: the first line, then its indented lines; the verdict comes next
    at = 1
    while at < len(lines) and lines[at].startswith("  "):
        at += 1
    while at < len(lines) and not lines[at].strip():
        at += 1
    if not lines[at].startswith("Verdict"):
        fail("%s: the text report's first block after the header is %r, not the verdict"
             % (name, lines[at]))
    said = [l.strip() for l in lines[at + 1: at + 1 + len(sentences)]]
    expect("%s: the verdict's sentences in the text" % name, said, sentences)
    # every figure of a sentence is one of the verdict's figures in the JSON
    figures = list(numbers(v))
    for s in sentences:
        for m in re.finditer(r"([+-]?)(\d+(?:\.\d)?)(Ki|Mi|Gi)?B\b", s):
            shown = m.group(2) + (m.group(3) or "")
            if not any(binary(abs(f)) == shown for f in figures):
                fail("%s: %r in %r is none of the verdict's figures %r" % (name, m.group(0), s, figures))
        for m in re.finditer(r"(\d+)%", s):
            if not any(abs(round(100 * f) - int(m.group(1))) < 1 for f in figures if 0 <= f <= 1):
                fail("%s: %s%% in %r is none of the verdict's shares" % (name, m.group(1), s))
        for m in re.finditer(r"epochs (\d+)\.\.(\d+)", s):
            w = field(v, "window")
            if (int(m.group(1)), int(m.group(2))) != (w["first"], w["last"]):
                fail("%s: %r is not the verdict's window %r" % (name, m.group(0), w))
    return v, sentences

demo, text, page = load(sys.argv[1]), open(sys.argv[2]).read(), open(sys.argv[3]).read()
v, sentences = verdict_of("demo", demo, text)
joined = " ".join(sentences)
if not re.search(r"RSS grows (about )?[\d.]+(Ki|Mi)?B( \+-[\d.]+(Ki|Mi)?B)? per epoch", sentences[0]):
    fail("demo: the first sentence does not say how much RSS grows per epoch: %r" % sentences[0])
for part in ("live", "slack", "pinned", "free-resident", "not traced"):
    if part not in sentences[0]:
        fail("demo: the RSS growth's part %r is not in %r" % (part, sentences[0]))
fn = field(v, "functions")[0]
expect("demo: the function holding the growth", fn["function"], "remember_session")
expect("demo: its growth", round(fn["bytes_per_epoch"]), 48)
expect("demo: its share", round(fn["share"], 2), 1.0)
expect("demo: its retention", fn["retention"], "leaked")
if not re.search(r"remember_session \(request_loop\)[^.]*\+48B per epoch[^.]*100% of the live growth[^.]*leaked", joined):
    fail("demo: the verdict does not name remember_session with +48B per epoch, 100%% and leaked: %r" % joined)
if "stash_response" in joined:
    fail("demo: the parked responses are in the verdict: %r" % joined)
# The steady window found without --epochs leaves out the start-up (epochs 0..7 fill the ring
# of eight parked 4 KiB responses; epoch 8 ends on the steady line) and ends before the
# exit's epoch; over it the leak's slope is exact and the same as over --epochs 8:199, and
# the parked responses grow nothing.
w = field(demo, "steady_window")
if w["how"] != "found" or w["first"] < 8 or w["last"] != 199 or field(w, "start_up")[0] != 0:
    fail("demo: the default window %r does not leave out the start-up 0..7 and end at 199" % w)
expect("demo: the verdict's window", field(v, "window"), {"first": w["first"], "last": w["last"]})
by_hand = load(sys.argv[9])
for report, how in ((demo, "default window"), (by_hand, "--epochs 8:199")):
    rows = {f["function"]: f["bytes_per_epoch"] for f in field(report, "functions")}
    expect("demo: remember_session over the %s" % how, rows.get("remember_session"), 48)
    expect("demo: stash_response over the %s" % how, rows.get("stash_response"), 0)
# leaked only for what is live at the exit: --epochs 8:150 ends while the process goes on, so
# what is live at its end is live, not leaked (issue 29 point 4); the default window's is
rows = {f["function"]: f["retention"] for f in field(load(sys.argv[10]), "functions")}
expect("demo: remember_session's retention over --epochs 8:150", rows.get("remember_session"),
       "live")
expect("demo: remember_session's retention over the default window",
       {f["function"]: f["retention"] for f in field(demo, "functions")}.get("remember_session"),
       "leaked")

# the page: the verdict first, before the summary and the charts
body = page[page.index("<body"):]
at = body.find(html.escape(sentences[0], quote=False))
if at < 0:
    fail("demo: the page does not carry the verdict's first sentence")
for later in ("<h2>Summary", "<h2>Over the epochs", "<h2>Top functions"):
    if later in body and body.index(later) < at:
        fail("demo: %s comes before the verdict on the page" % later)

cxx, cxx_text = load(sys.argv[4]), open(sys.argv[5]).read()
cv, cs = verdict_of("cxx", cxx, cxx_text)
typed = [f for f in field(cv, "functions") if f["type"]]
if not typed or not all(("type " + f["type"]) in " ".join(cs) for f in typed):
    fail("cxx: the verdict's functions and their types: %r / %r" % (field(cv, "functions"), cs))

one, one_text = load(sys.argv[6]), open(sys.argv[7]).read()
ov, os_ = verdict_of("one", one, one_text)
if not any("CHURN_EPOCH_AT" in s and "CHURN_EPOCH_MS" in s for s in os_):
    fail("one epoch: the verdict does not give an epoch source as the next step: %r" % os_)
# V8's heap, first on the page: in the verdict, before the summary
v8 = open(sys.argv[8]).read()
first = v8[v8.index("<body"):v8.index("<h2>Summary")]
if "V8&#39;s own heap" not in first and "V8's own heap" not in first:
    fail("v8: the page's verdict does not name V8's own heap:\n%s" % first[:2000])
if "heap snapshot" not in first:
    fail("v8: the page's verdict gives no heap snapshot as the next step")
print("demo: window %d..%d (start-up %r); %s" % (w["first"], w["last"], w["start_up"], " ".join(sentences)))
PY
echo "ok: the verdict leads the text report, the page and the JSON, and its figures are the JSON's"
