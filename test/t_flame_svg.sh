#!/bin/sh
# --svg in headless Chromium: the demo's flame graph renders with its frames and no console
# error; hovering a frame shows its value and share, clicking zooms into it, typing in the
# search box highlights the matches; the differential graph (--base) colours growth red; a
# graph of 50,000 distinct stacks draws a bounded number of boxes (tiny frames merged).
. test/lib.sh

build_c request_loop test/programs/request_loop.c
build_c many_stacks test/programs/many_stacks.c
traced "$WORK/demo.zst" "$WORK/demo.out" "$WORK/request_loop" 200
traced "$WORK/many.zst" "$WORK/many.out" "$WORK/many_stacks" 50000
for args in "--svg=alloc_bytes -o $WORK/alloc.svg" \
            "--svg=live_bytes --base 0:49 --epochs 150:199 -o $WORK/diff.svg"; do
    # shellcheck disable=SC2086
    "$ANALYZE" $args "$WORK/demo.zst" 2>"$WORK/svg.err" ||
        fail "churn-analyze $args failed: $(tail -n 1 "$WORK/svg.err")"
done
"$ANALYZE" --svg=live_bytes -o "$WORK/many.svg" "$WORK/many.zst" 2>"$WORK/svg.err" ||
    fail "churn-analyze --svg on 50,000 stacks failed: $(tail -n 1 "$WORK/svg.err")"
if grep -Eq '(href|src)="?https?:' "$WORK/alloc.svg"; then
    fail "the SVG refers to the network"
fi

check "$WORK" <<'PY'
import os, sys
from churncheck import *
from browser import Browser
work = sys.argv[1]
b = Browser()
try:
    b.load(os.path.join(work, "alloc.svg"))
    names = b.eval("Array.from(document.querySelectorAll('.cf-frame')).map(g => g.dataset.name)")
    for want in ("all", "main", "handle_request", "format_reply", "stash_response"):
        if want not in names:
            fail("alloc.svg: no frame %s among %s" % (want, names))
    def box(sel):
        r = b.eval("(function(){var e=document.querySelector(%r); if(!e) return null;"
                   "var r=e.getBoundingClientRect(); return [r.x,r.y,r.width,r.height]})()" % sel)
        if not r:
            fail("alloc.svg: nothing matches %s" % sel)
        return r
    frame = "g.cf-frame[data-name='%s'] rect"
    x, y, w, h = box(frame % "format_reply")
    b.hover(x + w / 2, y + h / 2)
    details = b.eval("document.querySelector('.cf-details').textContent")
    if not details.startswith("format_reply: ") or "% of all" not in details:
        fail("hovering format_reply shows %r" % details)
    tip = b.eval("document.querySelector('.cf-tip').getAttribute('visibility')")
    expect("tooltip visibility on hover", tip, "visible")

    full = box(frame % "all")[2]
    if w > full * 0.9:
        fail("format_reply is already %.0f of %.0f px before zooming" % (w, full))
    b.click(x + w / 2, y + h / 2)
    zoomed = box(frame % "format_reply")[2]
    if abs(zoomed - full) > 1:
        fail("after clicking format_reply its width is %.0f px, expected the full %.0f" % (zoomed, full))
    if b.eval("!!document.querySelector(\"g.cf-frame[data-name='stash_response']\")"):
        fail("stash_response is still drawn after zooming into format_reply")
    rx, ry, rw, rh = box(".cf-reset")
    b.click(rx + rw / 2, ry + rh / 2)
    expect("width of format_reply after reset", round(box(frame % "format_reply")[2]), round(w))

    sx, sy, sw, sh = box(".cf-search")
    b.click(sx + sw / 2, sy + sh / 2)
    b.type("stash|remember")
    lit = b.eval("Array.from(document.querySelectorAll('.cf-frame rect')).filter("
                 "r => r.getAttribute('fill') == 'rgb(225,0,225)').map(r => r.parentNode.dataset.name)")
    expect("frames highlighted by the search", sorted(lit), ["remember_session", "stash_response"])
    matched = b.eval("document.querySelector('.cf-matched').textContent")
    if not matched.startswith("Matched: ") or matched == "Matched: 0.00%":
        fail("search shows %r" % matched)
    if b.errors:
        fail("alloc.svg: console errors: %s" % b.errors)

    b.load(os.path.join(work, "diff.svg"))
    fills = b.eval("Array.from(document.querySelectorAll(\"g.cf-frame[data-name='remember_session'] rect\")).map(r => r.getAttribute('fill'))")
    if not fills or not fills[0].startswith("hsl(0,"):
        fail("diff.svg: remember_session (grew) is not red: %s" % fills)
    if b.errors:
        fail("diff.svg: console errors: %s" % b.errors)

    seconds = b.load(os.path.join(work, "many.svg"))
    drawn = b.eval("document.querySelectorAll('.cf-frame').length")
    tiny = b.eval("document.querySelectorAll('.cf-tiny').length")
    if not 100 <= drawn <= 5000 or not tiny:
        fail("many.svg: %d frames and %d merged boxes drawn for 50,000 stacks" % (drawn, tiny))
    if b.errors:
        fail("many.svg: console errors: %s" % b.errors)
    print("svg: zoom, hover and search work; 50,000 stacks: %d frames + %d merged boxes, "
          "loaded in %.2f s (%d bytes)" % (drawn, tiny, seconds, os.path.getsize(os.path.join(work, "many.svg"))))
finally:
    b.close()
PY
