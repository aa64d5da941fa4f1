#!/bin/sh
# JavaScript frames in workerd's stacks (docs/workerd.md, "JavaScript frames above IoContext"):
# the seed's case under the shim with V8's perf map turned on among workerd's V8 flags, the
# map removed before the analysis, so that the workers' functions can be named only by the
# trace's CODE records.  The per-subrequest objects that JavaScript makes must be allocated
# under `fetch (target.js:4)` (`new Response`) and `fetch (main.js:7)` (`await
# response.text()`), with workerd's frames inward and IoContext's outward, and those made from
# the event loop under none.  An unreachable npm registry fails the test: the real component
# is required.
. test/lib.sh

SUBREQUESTS=2000
PER_REQUEST=100

WORKERD=$(test/workerd/install.sh 2>"$WORK/install.err") ||
    fail "$(tail -n 1 "$WORK/install.err")"

# The seed's config with the flags added (workerd takes V8's flags from its config only), its
# modules beside it, where its embeds look.
cp test/workerd/main.js test/workerd/target.js "$WORK/"
flags='"--perf-basic-prof", "--interpreted-frames-native-stack"'
sed "s|^const config :Workerd.Config = (|&\n  v8Flags = [$flags],|" test/workerd/config.capnp \
    >"$WORK/config.capnp"
grep -q 'v8Flags' "$WORK/config.capnp" || fail "no v8Flags line in the config's copy"

status=0
python3 test/workerd/drive.py --workerd "$WORKERD" --config "$WORK/config.capnp" \
    --subrequests "$SUBREQUESTS" --per-request "$PER_REQUEST" --log "$WORK/traced.log" \
    --env "LD_PRELOAD=$SHIM" --env "CHURN_OUT=$WORK/traced.zst" \
    --env "CHURN_EPOCH_AT=workerd::IoContext::IoContext" \
    >"$WORK/traced.json" 2>"$WORK/traced.err" || status=$?
if [ "$status" -ne 0 ]; then
    tail -n 5 "$WORK/traced.log" 2>/dev/null || true
    fail "workerd: $(tail -n 1 "$WORK/traced.err")"
fi
[ -s "$WORK/traced.zst" ] || fail "workerd ran under the shim but wrote no trace"
pid=$(check "$WORK/traced.json" <<'PY'
import sys
from churncheck import *
print(field(load(sys.argv[1]), "pid"))
PY
) || fail "$pid"
map=absent
if [ -f "/tmp/perf-$pid.map" ]; then
    map=written
    rm -f "/tmp/perf-$pid.map"
fi
analyze "$WORK/traced.zst" "$WORK/traced.report.json"
analyze "$WORK/traced.zst" "$WORK/traced.script.json" --script-functions
check "$WORK/traced.report.json" "$WORK/traced.script.json" "$map" "$SUBREQUESTS" <<'PY'
import sys
from churncheck import *
report, script = load(sys.argv[1]), load(sys.argv[2])
map_state, subrequests = sys.argv[3], int(sys.argv[4])
# Every callsite (the growth table has them all), innermost frame first.  Whether the objects
# grow depends on when V8 collects, so the checks count allocations, not growth.
callsites = field(report, "growth")
def js(frame):
    return " (target.js:" in frame or " (main.js:" in frame
def shaped(stack, script, inward, outward):
    """stack holds script's frame outward of a frame starting with inward, a frame of workerd's
    own code right outward of it, and one starting with outward further out."""
    if script not in stack:
        return False
    i = stack.index(script)
    return (any(f.startswith(inward) for f in stack[:i]) and i + 1 < len(stack)
            and "(workerd+0x" in stack[i + 1]
            and any(f.startswith(outward) for f in stack[i + 1:]))
def allocs(rows):
    return sum(g["allocs"] for g in rows)
def under_js(g):
    return any(js(f) for f in g["stack"])
named = len([g for g in callsites if under_js(g)])
# the target's `new Response("ok")`, once per subrequest
ctor = "workerd::api::Response::constructor("
made = [g for g in callsites if g["stack"][0].startswith(ctor)]
request = "workerd::api::ServiceWorkerGlobalScope::request("
target = [g for g in made
          if shaped(g["stack"], "fetch (target.js:4)", ctor, "workerd::IoContext::runSingle<")
          and any(f.startswith(request) for f in g["stack"])]
# the main worker's `await response.text()`, run by V8's microtasks within IoContext::runImpl
text = "workerd::api::Body::text("
read = [g for g in callsites if any(f.startswith(text) for f in g["stack"])]
main = [g for g in read
        if shaped(g["stack"], "fetch (main.js:7)", text, "workerd::IoContext::runImpl(")]
if (allocs(target) < subrequests or allocs(main) < subrequests
        or allocs(main) < 0.99 * allocs(read)):
    fail("%d of %d allocations in Response::constructor under fetch (target.js:4) and "
         "ServiceWorkerGlobalScope::request, %d of %d in Body::text under fetch (main.js:7) "
         "and IoContext::runImpl, for %d subrequests; %d callsites name a worker's fetch "
         "at all (V8's perf map was %s)"
         % (allocs(target), allocs(made), allocs(main), allocs(read), subrequests, named,
            map_state))
# the response made from the event loop after the subrequest's I/O: no JavaScript frame
http = [g for g in callsites if g["stack"][0].startswith("workerd::api::makeHttpResponse(")]
if allocs(http) < subrequests or any(under_js(g) for g in http):
    fail("makeHttpResponse: %d allocations for %d subrequests, %d of them under JavaScript"
         % (allocs(http), subrequests, allocs(g for g in http if under_js(g))))
functions = {(f["function"], f["module"]): f for f in field(script, "functions")}
for module in ("target.js:4", "main.js:7"):
    row = functions.get(("fetch", module))
    if not row or row["allocs"] < subrequests:
        fail("--script-functions: fetch in %s: %s allocations for %d subrequests"
             % (module, row and row["allocs"], subrequests))
expect("V8's perf map", map_state, "written")
print("JavaScript frames named from the trace alone: %d callsites under a worker's fetch;"
      " %d new Response under fetch (target.js:4), %d allocations of response.text() under"
      " fetch (main.js:7); --script-functions: fetch (target.js:4) %d, fetch (main.js:7) %d"
      " allocations" % (named, allocs(target), allocs(main),
                        functions[("fetch", "target.js:4")]["allocs"],
                        functions[("fetch", "main.js:7")]["allocs"]))
PY
