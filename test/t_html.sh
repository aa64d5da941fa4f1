#!/bin/sh
# --html on the demo workload, opened in headless Chromium: the page needs no network and
# logs no error; it has the summary, the three charts over the epochs, the top growth table
# led by remember_session with its stack, the lifetime buckets and two flame graphs in which
# switching the metric, zooming and searching work; the caller/callee view adds up and sorts.
# Leaves a screenshot in build/test/html/.
. test/lib.sh

build_c request_loop test/programs/request_loop.c
traced "$WORK/demo.zst" "$WORK/demo.out" "$WORK/request_loop" 200
"$ANALYZE" --html -o "$WORK/report.html" "$WORK/demo.zst" 2>"$WORK/html.err" ||
    fail "churn-analyze --html failed: $(tail -n 1 "$WORK/html.err")"
"$ANALYZE" --json "$WORK/demo.zst" >"$WORK/report.json" 2>"$WORK/json.err" ||
    fail "churn-analyze --json failed: $(tail -n 1 "$WORK/json.err")"
if grep -Eiq '(href|src)="?(https?:)?//' "$WORK/report.html"; then
    fail "report.html refers to the network"
fi

check "$WORK" <<'PY'
import os, sys
from churncheck import *
from browser import Browser
work = sys.argv[1]
b = Browser(1280, 900)
try:
    b.load(os.path.join(work, "report.html"))
    heads = b.eval("Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
    for want in ("Summary", "Over the epochs", "Live vs fragmented (model glibc)",
                 "Top callsites by retained growth", "Lifetimes in epochs", "Flame graphs"):
        if want not in heads:
            fail("report.html has no section %r (has %s)" % (want, heads))
    lines = b.eval("Array.from(document.querySelectorAll('svg.chart polyline')).map(p => p.getAttribute('points').trim().split(' ').length)")
    if len(lines) != 3 or min(lines) < 100:
        fail("expected 3 charts with a point per epoch, got %s" % lines)
    # The duration chart's scale: the longest epoch but the first and the last (start-up and
    # exit), to three digits, so that sub-millisecond epochs are drawn, not cut to 0 ms.
    epochs = [e for e in load(os.path.join(work, "report.json"))["epochs"] if e["summary"]]
    longest = max(e["wall_ns"] for e in epochs[1:-1]) / 1e6
    label = b.eval("document.querySelectorAll('svg.chart')[2].querySelector('g text').textContent")
    if not label.endswith(" ms") or abs(float(label[:-3]) - longest) > 0.006 * longest:
        fail("duration chart's top is %r, the longest middle epoch %.4g ms" % (label, longest))
    parts = b.eval("document.querySelectorAll('svg.chart polygon').length")
    if parts != 7:
        fail("the live-vs-fragmented chart has %d parts, expected 7" % parts)
    first = b.eval("(function(){var h=Array.from(document.querySelectorAll('h2')).find(h=>"
                   "h.textContent.startsWith('Top callsites')); var t=h.nextElementSibling;"
                   " while(t && t.tagName!='TABLE') t=t.nextElementSibling;"
                   " return t.querySelector('tr:nth-child(2) td.stack').textContent})()")
    if "remember_session (test/programs/request_loop.c:" not in first:
        fail("the first growth row is not remember_session with file:line: %r" % first[:120])
    bars = b.eval("document.querySelectorAll('h2 + svg.chart rect').length")
    if bars < 17:
        fail("lifetime chart has %d bars" % bars)
    graphs = b.eval("Array.from(document.querySelectorAll('svg.flame')).map(s => s.querySelectorAll('.cf-frame').length)")
    if len(graphs) != 2 or min(graphs) < 5:
        fail("flame graphs with frames: %s" % graphs)

    def box(sel):
        r = b.eval("(function(){var e=document.querySelector(%r); if(!e) return null; e.scrollIntoView();"
                   "var r=e.getBoundingClientRect(); return [r.x,r.y,r.width,r.height]})()" % sel)
        if not r:
            fail("report.html: nothing matches %s" % sel)
        return r
    churn = "#flame-churn g.cf-frame[data-name='%s'] rect"
    before = box(churn % "format_reply")[2]
    x, y, w, h = box(churn % "handle_request")
    b.click(x + w / 2, y + h / 2)
    after = box(churn % "format_reply")[2]
    if not after > before * 1.05:
        fail("zooming into handle_request left format_reply at %.0f px (was %.0f)" % (after, before))
    if b.eval("!!document.querySelector(\"#flame-churn g.cf-frame[data-name='stash_response']\")"):
        fail("stash_response is still drawn in the zoomed churn graph")

    # The retained graph shows live bytes: only the leak; switching to allocations brings the rest.
    retained = "#flame-retained g.cf-frame"
    if b.eval("!!document.querySelector(\"%s[data-name='format_reply']\")" % retained):
        fail("format_reply (nothing live) is drawn in the retained graph")
    b.eval("(function(){var s=document.querySelector('#flame-retained .cf-metric'); s.value='1';"
           "s.dispatchEvent(new Event('change'))})()")
    if not b.eval("!!document.querySelector(\"%s[data-name='format_reply']\")" % retained):
        fail("switching the retained graph to allocations does not draw format_reply")

    sx, sy, sw, sh = box("#flame-retained .cf-search")
    b.click(sx + sw / 2, sy + sh / 2)
    b.type("read_request")
    lit = b.eval("Array.from(document.querySelectorAll('#flame-retained .cf-frame rect')).filter("
                 "r => r.getAttribute('fill') == 'rgb(225,0,225)').map(r => r.parentNode.dataset.name)")
    expect("retained graph search highlights", lit, ["read_request_line"])
    # Caller/callee view: self and inclusive values per function, its callers and callees.
    def callers_rows():
        return b.eval("Array.from(document.getElementById('callers').rows).slice(1).map(r => ["
                      "+r.cells[1].dataset.v, +r.cells[2].dataset.v, +r.cells[3].dataset.v, "
                      "+r.cells[4].dataset.v, r.cells[5].querySelector('summary').textContent, "
                      "r.cells[5].textContent])")
    rows = {r[4].split(" (")[0]: r for r in callers_rows()}
    for name in ("handle_request", "remember_session", "format_reply", "main"):
        if name not in rows:
            fail("the caller/callee view has no row for %s: %s" % (name, list(rows)[:10]))
    hr = rows["handle_request"]
    # handle_request allocates nothing itself; its five callees' allocations are its own
    # inclusive ones (strndup's under copy_route), and what remember_session keeps.
    expect("handle_request self allocs", hr[2], 0)
    expect("handle_request inclusive allocs", hr[3],
           sum(rows[n][3] for n in ("remember_session", "format_reply", "read_request_line",
                                    "parse_headers", "copy_route")))
    expect("handle_request inclusive retained", hr[1], rows["remember_session"][0])
    for callee in ("remember_session", "format_reply", "copy_route"):
        if ": " + callee not in hr[5].split("calls (")[1]:
            fail("handle_request's callees do not list %s: %r" % (callee, hr[5]))
    if "allocs: handle_request" not in rows["remember_session"][5].split("calls (")[0]:
        fail("remember_session's callers do not list handle_request: %r" % rows["remember_session"][5])
    expect("main's inclusive allocs", rows["main"][3], max(r[3] for r in rows.values()))
    # Sorting by the self allocations column puts format_reply (600) first.
    b.eval("document.getElementById('callers').rows[0].cells[3].click()")
    expect("first row sorted by self allocs", callers_rows()[0][4].split(" (")[0], "format_reply")
    if b.errors:
        fail("report.html: console errors: %s" % b.errors)
    b.eval("location.reload()")
    b.wait_event("Page.loadEventFired")
    b.eval("window.scrollTo(0, 0)")
    b.screenshot(os.path.join(work, "report.png"))
    print("html: %d chart points, flame frames %s, screenshot %s" % (sum(lines), graphs, os.path.join(work, "report.png")))
finally:
    b.close()
PY
