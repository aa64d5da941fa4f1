#!/bin/sh
# Known start-up allocations are kept out of the callsite ranking (analyzer/analyze/suppress.c): a C++
# program's libstdc++ emergency exception pool, allocated by libstdc++'s initializer under
# ld.so, is named once as what it is and not ranked, in text, JSON and HTML; without the
# built-in list (--no-default-suppressions) it is ranked as before; a user's file
# (--suppressions) adds rules; a missing file or a bad rule is one line and exit status 2.
. test/lib.sh

build_cxx cxx_keep test/programs/cxx_keep.cc
traced "$WORK/t.zst" "$WORK/t.out" "$WORK/cxx_keep"
run() { # NAME ARGS...: the analyzer must succeed
    name=$1
    shift
    "$ANALYZE" "$@" "$WORK/t.zst" >"$WORK/$name" 2>"$WORK/$name.err" ||
        fail "churn-analyze $* failed: $(tail -n 1 "$WORK/$name.err")"
}
run default.txt
run default.json --json
run default.html --html
run all.json --json --no-default-suppressions
run all.txt --no-default-suppressions
printf '# the cache lives as long as the program, on purpose\n\nleak:cache_forever   # kept\n' \
    >"$WORK/user.supp"
run user.txt --suppressions "$WORK/user.supp"
run user.json --json --suppressions "$WORK/user.supp"

check "$WORK" <<'PY'
import os, re, sys
from churncheck import *
work = sys.argv[1]
def text(name):
    return open(os.path.join(work, name)).read()
def ranked(name):
    t = text(name)
    return t[t.index("Top callsites by retained growth:"):t.index("Live vs fragmented")].split("\nNot ranked")[0]

# the pool: the one callsite whose innermost frames are libstdc++'s, called from ld.so
d = load(os.path.join(work, "default.json"))
pool = [g for g in field(d, "growth") if g["suppressed"] == "init:libstdc++.so*"]
if len(pool) != 1:
    fail("default: %d callsites suppressed by init:libstdc++.so*, expected 1 (the pool)" % len(pool))
p = pool[0]
if not (p["live_count"] == 1 and 64 << 10 <= p["live_bytes"] <= 128 << 10):
    fail("the suppressed callsite is not one object of about 72 KiB: %s" % p)
if not any("call_init" in f or "_dl_init" in f for f in p["stack"]):
    fail("the suppressed callsite is not called from ld.so's initializers: %s" % p["stack"])
sup = field(d, "suppressed")
expect("default: suppressed rules", [(s["rule"], s["callsites"], s["live_count"], s["live_bytes"]) for s in sup],
       [("init:libstdc++.so*", 1, 1, p["live_bytes"])])
if "emergency exception-handling pool" not in sup[0]["what"]:
    fail("the rule does not say what the pool is: %r" % sup[0]["what"])
others = [g for g in field(d, "growth") if g["suppressed"]]
expect("default: callsites suppressed", len(others), 1)
inner = p["stack"][0]
t = text("default.txt")
if inner in ranked("default.txt"):
    fail("default text: the pool (%s) is still ranked" % inner)
expect("default text: 'Not ranked' lines for the pool",
       len(re.findall(r"^  init:libstdc\+\+\.so\*: live 1 objects .* in 1 callsite\(s\): libstdc\+\+'s", t, re.M)), 1)
# the function row the pool makes (libstdc++.so.6+0xOFFSET) goes with it
fns = [f for f in field(d, "functions") if f["suppressed"]]
expect("default: function rows suppressed", [(f["suppressed"], f["live_bytes"]) for f in fns],
       [("init:libstdc++.so*", p["live_bytes"])])
fname = fns[0]["function"]
fsec = t[t.index("Top functions by retained growth"):t.index("Top callsites by retained growth")]
if fname in fsec:
    fail("default text: the pool's function %s is still ranked" % fname)
if fname not in text("all.txt"):
    fail("--no-default-suppressions: the pool's function is not shown")
h = text("default.html")
top = h[h.index("Top callsites by retained growth"):]
top = top[:top.index("</table>")]
if inner in top:
    fail("default html: the pool is still in the callsite table")
if "Not ranked, a known allocation that is not a leak: <code>init:libstdc++.so*</code>, live 1 objects" not in h:
    fail("default html: the page does not say what was left out")

# without the built-in list: nothing suppressed, the pool ranked first (the biggest live)
a = load(os.path.join(work, "all.json"))
expect("--no-default-suppressions: suppressed rules", field(a, "suppressed"), [])
if any(g["suppressed"] for g in field(a, "growth")):
    fail("--no-default-suppressions: a callsite is still suppressed")
first = ranked("all.txt").split("  #2 ")[0]
if inner not in first:
    fail("--no-default-suppressions: the pool is not ranked #1:\n" + first)

# the user's file: the cache's two callsites (the strings and their buffers) join the pool
u = load(os.path.join(work, "user.json"))
rules = {s["rule"]: s for s in field(u, "suppressed")}
cache = rules.get("leak:cache_forever")
if not cache:
    fail("the user's rule matched nothing: %s" % field(u, "suppressed"))
expect("leak:cache_forever (callsites, objects)", (cache["callsites"], cache["live_count"]), (2, 32))
expect("leak:cache_forever bytes", cache["live_bytes"],
       16 * 32 + sum(201 + i for i in range(16)))
expect("leak:cache_forever what", cache["what"], os.path.join(work, "user.supp") + ":3")
if "init:libstdc++.so*" not in rules:
    fail("a user file replaced the built-in list instead of adding to it")
r = ranked("user.txt")
if "cache_forever" in r or "forget_some" not in r:
    fail("user text: cache_forever ranked or forget_some not:\n" + r)
print("suppressions: the pool (%d B) named once and not ranked; a user rule moved %d objects" %
      (p["live_bytes"], cache["live_count"]))
PY

# Bad input: one line on stderr, exit status 2.
for case in missing bad; do
    case $case in
    missing) f=$WORK/no-such.supp ;;
    bad) f=$WORK/bad.supp; printf 'leak:ok\nfoo\n' >"$f" ;;
    esac
    status=0
    "$ANALYZE" --suppressions "$f" "$WORK/t.zst" >"$WORK/$case.out" 2>"$WORK/$case.err" || status=$?
    [ $status -eq 2 ] || fail "--suppressions ($case): exit status $status, expected 2"
    [ "$(wc -l <"$WORK/$case.err")" -eq 1 ] || fail "--suppressions ($case): not one line: $(cat "$WORK/$case.err")"
done
grep -q "bad.supp:2: 'foo' is not leak:PATTERN or init:MODULE-PATTERN" "$WORK/bad.err" ||
    fail "a bad rule is not named with its line: $(cat "$WORK/bad.err")"
"$ANALYZE" --help | grep -q -- "--suppressions FILE" || fail "--help does not list --suppressions"
echo "bad suppression files refused in one line"
