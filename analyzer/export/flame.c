#include "export/flame.h"

#include <stdlib.h>

/* A frame is kept when it is at least this share (1/N) of some column's total: at 1200
   pixels, still about a pixel wide after a 100x zoom. */
#define KEEP_SHARE 100000

void churn_flame_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static int kept(const churn_tree *t, uint32_t node)
{
    for (unsigned c = 0; c < t->cols; c++) {
        int64_t v = t->total[(size_t)node * t->cols + c], all = t->total[c];
        if (v > 0 && v >= all / KEEP_SHARE)
            return 1;
    }
    return 0;
}

/* Pre-order: string of the name, of the module, number of kept children, then the totals. */
static void nodes(FILE *out, const churn_tree *t, uint32_t node)
{
    size_t kids = 0;
    for (uint32_t k = t->nodes[node].child; k; k = t->nodes[k].sibling)
        kids += kept(t, k);
    fprintf(out, "%s%u,%u,%zu", node ? ",\n" : "", t->nodes[node].name, t->nodes[node].module,
            kids);
    for (unsigned c = 0; c < t->cols; c++)
        fprintf(out, ",%lld", (long long)t->total[(size_t)node * t->cols + c]);
    for (uint32_t k = t->nodes[node].child; k; k = t->nodes[k].sibling)
        if (kept(t, k))
            nodes(out, t, k);
}

void churn_flame_data(FILE *out, const churn_tree *t, const churn_flame_desc *d)
{
    fputs("{\"title\": ", out);
    churn_flame_string(out, d->title);
    fputs(", \"subtitle\": ", out);
    churn_flame_string(out, d->subtitle);
    fprintf(out, ", \"col\": %u, \"base\": %d, \"cols\": [", d->col, d->base);
    for (unsigned c = 0; c < t->cols; c++) {
        fputs(c ? ", " : "", out);
        churn_flame_string(out, d->col_titles[c]);
    }
    fputs("], \"units\": [", out);
    for (unsigned c = 0; c < t->cols; c++) {
        fputs(c ? ", " : "", out);
        churn_flame_string(out, d->col_units[c]);
    }
    fputs("],\n\"strings\": [", out);
    for (size_t i = 0; i < t->nstrings; i++) {
        fputs(i ? (i % 8 ? ", " : ",\n") : "", out);
        churn_flame_string(out, t->strings[i]);
    }
    fputs("],\n\"nodes\": [\n", out);
    nodes(out, t, 0);
    fputs("]}", out);
}

/* Kept as text so that one copy serves the SVG file and the HTML page alike. */
static const char script[] =
    "// churnFlame(svg, data): draws data (a stack tree, see export/flame.c) into the <svg>\n"
    "// element as a flame graph, root at the bottom.  Only frames at least MIN_PX wide at the\n"
    "// current zoom are drawn; a parent's narrower children become one grey box, so the cost of\n"
    "// a redraw follows the pixels, not the number of stacks.\n"
    "function churnFlame(svg, data) {\n"
    "  'use strict';\n"
    "  var NS = 'http://www.w3.org/2000/svg', XH = 'http://www.w3.org/1999/xhtml';\n"
    "  var W = 1200, FH = 17, TOP = 40, BOTTOM = 24, PAD = 10, FONT = 11, MIN_PX = 0.5;\n"
    "  var names = data.strings, modules = data.strings, cols = data.cols.length;\n"
    "  var col = data.col, base = data.base, flat = data.nodes;\n"
    "  var nodes = [], maxDepth = 0;\n"
    "  (function build() {\n"
    "    var pos = 0, stride = 3 + cols;\n"
    "    function node(parent, depth) {\n"
    "      var n = {name: names[flat[pos]], module: modules[flat[pos + 1]],\n"
    "               v: flat.slice(pos + 3, pos + stride),\n"
    "               parent: parent, depth: depth, kids: [], i: nodes.length};\n"
    "      var k = flat[pos + 2];\n"
    "      pos += stride;\n"
    "      nodes.push(n);\n"
    "      if (depth > maxDepth) maxDepth = depth;\n"
    "      for (var j = 0; j < k; j++) n.kids.push(node(n, depth + 1));\n"
    "      return n;\n"
    "    }\n"
    "    node(null, 0);\n"
    "  })();\n"
    "  var root = nodes[0], zoom = root, match = null, width = [];\n"
    "  // A node's width covers its own value and, in a differential graph, the base's, and never\n"
    "  // less than its children need.\n"
    "  function layout() {\n"
    "    for (var i = nodes.length - 1; i >= 0; i--) {\n"
    "      var n = nodes[i], w = Math.max(n.v[col], base >= 0 ? n.v[base] : 0), s = 0;\n"
    "      for (var j = 0; j < n.kids.length; j++) s += width[n.kids[j].i];\n"
    "      width[i] = Math.max(w, s);\n"
    "    }\n"
    "  }\n"
    "  var maxDelta = 1;\n"
    "  function deltas() {\n"
    "    maxDelta = 1;\n"
    "    if (base < 0) return;\n"
    "    for (var i = 1; i < nodes.length; i++)\n"
    "      maxDelta = Math.max(maxDelta, Math.abs(nodes[i].v[col] - nodes[i].v[base]));\n"
    "  }\n"
    "  function hash(s) {\n"
    "    var h = 2166136261;\n"
    "    for (var i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);\n"
    "    return h >>> 0;\n"
    "  }\n"
    "  function color(n) {\n"
    "    if (n === root) return 'rgb(200,200,205)';\n"
    "    if (base >= 0) {\n"
    "      var d = (n.v[col] - n.v[base]) / maxDelta;\n"
    "      var l = Math.round(96 - 46 * Math.min(1, Math.abs(d)));\n"
    "      if (!d) return 'hsl(0,0%,92%)';\n"
    "      return 'hsl(' + (d > 0 ? 0 : 215) + ',85%,' + l + '%)';\n"
    "    }\n"
    "    var hue = hash(n.module || '?') % 360;\n"
    "    var light = 58 + hash(n.name) % 16;\n"
    "    return 'hsl(' + hue + ',' + (n.module ? 62 : 8) + '%,' + light + '%)';\n"
    "  }\n"
    "  function human(v) {\n"
    "    var unit = data.units[col];\n"
    "    if (unit !== 'bytes') return v.toLocaleString('en-US') + ' ' + unit;\n"
    "    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], k = 0, m = Math.abs(v);\n"
    "    while (m >= 1024 && k < u.length - 1) { m /= 1024; k++; }\n"
    "    return (v < 0 ? '-' : '') + (k ? m.toFixed(1) : m) + ' ' + u[k];\n"
    "  }\n"
    "  function pct(v, of) { return of ? (100 * v / of).toFixed(2) + '%' : '-'; }\n"
    "  function el(name, attrs, parent, ns) {\n"
    "    var e = document.createElementNS(ns || NS, name);\n"
    "    for (var k in attrs) e.setAttribute(k, attrs[k]);\n"
    "    if (parent) parent.appendChild(e);\n"
    "    return e;\n"
    "  }\n"
    "  function text(parent, x, y, s, attrs) {\n"
    "    var t = el('text', attrs || {}, parent);\n"
    "    t.setAttribute('x', x);\n"
    "    t.setAttribute('y', y);\n"
    "    t.textContent = s;\n"
    "    return t;\n"
    "  }\n"
    "  var height = TOP + (maxDepth + 1) * FH + BOTTOM;\n"
    "  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + height);\n"
    "  if (!svg.getAttribute('width')) svg.setAttribute('width', W);\n"
    "  svg.setAttribute('height', height);\n"
    "  var top = el('g', {'class': 'churn-flame'}, svg);\n"
    "  el('rect', {x: 0, y: 0, width: W, height: height, fill: '#fdfdfb'}, top);\n"
    "  text(top, W / 2, 16, data.title,\n"
    "       {'text-anchor': 'middle', 'font-size': 15, 'font-weight': 'bold', 'class': 'cf-title'});\n"
    "  text(top, W / 2, 31, data.subtitle, {'text-anchor': 'middle', 'font-size': 11, fill: '#555'});\n"
    "  var reset = text(top, PAD, 31, 'Reset zoom',\n"
    "                   {'class': 'cf-reset', cursor: 'pointer', fill: '#0645ad', visibility: 'hidden'});\n"
    "  var matched = text(top, W - PAD, height - 6, '', {'text-anchor': 'end', 'class': 'cf-matched'});\n"
    "  var details = text(top, PAD, height - 6, ' ', {'class': 'cf-details'});\n"
    "  var fo = el('foreignObject', {x: W - 330, y: 2, width: 320, height: 24}, top);\n"
    "  var form = el('div', {style: 'display:flex;gap:4px;justify-content:flex-end;font:12px sans-serif'},\n"
    "                fo, XH);\n"
    "  if (cols > 1 && base < 0) {\n"
    "    var pick = el('select', {'class': 'cf-metric', title: 'metric', style: 'width:170px'},\n"
    "                  form, XH);\n"
    "    for (var c = 0; c < cols; c++) {\n"
    "      var o = el('option', {value: c}, pick, XH);\n"
    "      o.textContent = data.cols[c];\n"
    "      if (c === col) o.selected = true;\n"
    "    }\n"
    "    pick.addEventListener('change', function () {\n"
    "      col = +pick.value;\n"
    "      layout();\n"
    "      deltas();\n"
    "      zoom = root;\n"
    "      draw();\n"
    "    });\n"
    "  }\n"
    "  var search = el('input', {type: 'search', placeholder: 'search (regexp)', 'class': 'cf-search',\n"
    "                            style: 'width:150px'}, form, XH);\n"
    "  var frames = el('g', {'class': 'cf-frames', 'font-size': FONT}, top);\n"
    "  var tip = el('g', {'class': 'cf-tip', visibility: 'hidden', 'pointer-events': 'none'}, top);\n"
    "  var tipBox = el('rect', {rx: 3, fill: '#ffffe8', stroke: '#888'}, tip);\n"
    "  var tipText = [text(tip, 6, 14, ''), text(tip, 6, 28, '')];\n"
    "  var drawn = [];\n"
    "\n"
    "  function describe(n) {\n"
    "    var total = width[root.i], line;\n"
    "    if (n.tiny)\n"
    "      return [n.count + ' frames too small to draw: ' + human(n.value) + ' (' +\n"
    "              pct(n.value, total) + ')', ''];\n"
    "    var v = n.v[col];\n"
    "    if (base >= 0)\n"
    "      line = n.name + ': ' + human(n.v[base]) + ' \\u2192 ' + human(v) + ' (' +\n"
    "             (v >= n.v[base] ? '+' : '') + human(v - n.v[base]) + ')';\n"
    "    else\n"
    "      line = n.name + ': ' + human(v) + ' (' + pct(v, n === root ? total : root.v[col]) +\n"
    "             ' of all' + (zoom !== root ? ', ' + pct(v, zoom.v[col]) + ' of the zoomed frame' : '') + ')';\n"
    "    return [line, 'module: ' + (n.module || 'unknown') +\n"
    "                  (n.kids.length ? ', ' + n.kids.length + ' callee(s)' : '')];\n"
    "  }\n"
    "  function isMatch(n) { return match && !n.tiny && match.test(n.name); }\n"
    "  function rect(n, x, w, cls) {\n"
    "    var y = height - BOTTOM - (n.depth + 1) * FH;\n"
    "    var g = el('g', {'class': cls, 'data-i': drawn.length, 'data-name': n.tiny ? '' : n.name},\n"
    "               frames);\n"
    "    drawn.push(n);\n"
    "    el('rect', {x: x.toFixed(2), y: y, width: Math.max(w - 0.4, 0.1).toFixed(2), height: FH - 1,\n"
    "                rx: 1.5,\n"
    "                fill: n.tiny ? '#ddd' : isMatch(n) ? 'rgb(225,0,225)' : color(n)}, g);\n"
    "    var fit = Math.floor((w - 6) / (FONT * 0.6));\n"
    "    var label = n.tiny ? '\\u2026' : n.name;\n"
    "    if (fit >= 3)\n"
    "      text(g, x + 3, y + FH - 5, label.length <= fit ? label : label.slice(0, fit - 2) + '..');\n"
    "  }\n"
    "  function drawKids(n, x, scale) {\n"
    "    var tiny = 0, count = 0, cx = x;\n"
    "    for (var j = 0; j < n.kids.length; j++) {\n"
    "      var k = n.kids[j], w = width[k.i] * scale;\n"
    "      if (w >= MIN_PX) {\n"
    "        rect(k, cx, w, 'cf-frame');\n"
    "        drawKids(k, cx, scale);\n"
    "      } else if (width[k.i] > 0) {\n"
    "        tiny += width[k.i];\n"
    "        count++;\n"
    "      }\n"
    "      cx += w;\n"
    "    }\n"
    "    if (count && tiny * scale >= 1)\n"
    "      rect({tiny: true, depth: n.depth + 1, value: tiny, count: count, parent: n, kids: []},\n"
    "           cx - tiny * scale, tiny * scale, 'cf-tiny');\n"
    "  }\n"
    "  function draw() {\n"
    "    while (frames.firstChild) frames.removeChild(frames.firstChild);\n"
    "    drawn = [];\n"
    "    var span = width[zoom.i] || 1, scale = (W - 2 * PAD) / span;\n"
    "    for (var a = zoom.parent; a; a = a.parent)\n"
    "      rect(a, PAD, W - 2 * PAD, 'cf-frame cf-ancestor');\n"
    "    rect(zoom, PAD, W - 2 * PAD, 'cf-frame');\n"
    "    drawKids(zoom, PAD, scale);\n"
    "    reset.setAttribute('visibility', zoom === root ? 'hidden' : 'visible');\n"
    "    showMatch();\n"
    "  }\n"
    "  // The share of the matched frames, each subtree counted once.\n"
    "  function showMatch() {\n"
    "    if (!match) { matched.textContent = ''; return; }\n"
    "    var sum = 0;\n"
    "    (function walk(n) {\n"
    "      if (match.test(n.name)) { sum += n.v[col]; return; }\n"
    "      for (var j = 0; j < n.kids.length; j++) walk(n.kids[j]);\n"
    "    })(zoom);\n"
    "    matched.textContent = 'Matched: ' + pct(sum, zoom.v[col]);\n"
    "  }\n"
    "  function target(evt) {\n"
    "    for (var e = evt.target; e && e !== svg; e = e.parentNode)\n"
    "      if (e.getAttribute && e.getAttribute('data-i') !== null)\n"
    "        return drawn[+e.getAttribute('data-i')];\n"
    "    return null;\n"
    "  }\n"
    "  frames.addEventListener('mousemove', function (evt) {\n"
    "    var n = target(evt);\n"
    "    if (!n) return;\n"
    "    var lines = describe(n);\n"
    "    details.textContent = lines[0];\n"
    "    tipText[0].textContent = lines[0];\n"
    "    tipText[1].textContent = lines[1];\n"
    "    var tw = Math.min(W - 20, 12 + 6.2 * Math.max(lines[0].length, lines[1].length));\n"
    "    var p = svg.createSVGPoint();\n"
    "    p.x = evt.clientX; p.y = evt.clientY;\n"
    "    var m = svg.getScreenCTM();\n"
    "    if (m) p = p.matrixTransform(m.inverse());\n"
    "    var tx = Math.min(p.x + 12, W - tw - 4), ty = Math.max(p.y - 44, 2);\n"
    "    tipBox.setAttribute('width', tw);\n"
    "    tipBox.setAttribute('height', 36);\n"
    "    tip.setAttribute('transform', 'translate(' + tx.toFixed(1) + ',' + ty.toFixed(1) + ')');\n"
    "    tip.setAttribute('visibility', 'visible');\n"
    "  });\n"
    "  frames.addEventListener('mouseleave', function () {\n"
    "    tip.setAttribute('visibility', 'hidden');\n"
    "    details.textContent = ' ';\n"
    "  });\n"
    "  frames.addEventListener('click', function (evt) {\n"
    "    var n = target(evt);\n"
    "    if (!n) return;\n"
    "    zoom = n.tiny ? n.parent : n;\n"
    "    tip.setAttribute('visibility', 'hidden');\n"
    "    draw();\n"
    "  });\n"
    "  reset.addEventListener('click', function () { zoom = root; draw(); });\n"
    "  search.addEventListener('input', function () {\n"
    "    var s = search.value;\n"
    "    if (!s) match = null;\n"
    "    else {\n"
    "      try { match = new RegExp(s, 'i'); }\n"
    "      catch (e) { match = new RegExp(s.replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&'), 'i'); }\n"
    "    }\n"
    "    draw();\n"
    "  });\n"
    "  layout();\n"
    "  deltas();\n"
    "  draw();\n"
    "  return {\n"
    "    zoomTo: function (i) { zoom = nodes[i]; draw(); },\n"
    "    nodes: nodes\n"
    "  };\n"
    "}\n"
    ;

void churn_flame_script(FILE *out)
{
    fputs(script, out);
}
