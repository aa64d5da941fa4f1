#!/bin/sh
# Many MODULE records naming one file (a library loaded and unloaded 4,096 times, or a crafted
# trace of a few KB) share one reading of it: its libdw session, debug info, symbol table,
# call frame entries and symbol cache file are read once for all of them, so the analyzer's
# memory is bounded by the files, not by the records.  libc with its debug info (libc6-dbg)
# costs about 9 MB a record read on its own.  Each run is under an address-space limit, and
# its peak RSS is compared with one record's.
LIB_ANALYZER_ONLY=1
. test/lib.sh
T=$WORK

LIBC=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)
id=$(readelf -n "$LIBC" | awk '/Build ID/ { print $3 }')
[ -n "$id" ] || fail "$LIBC has no build id"
debug=/usr/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug
[ -f "$debug" ] || fail "$debug missing: install libc6-dbg"
# 1,000 functions of libc, an ip a few bytes into each
nm -D --defined-only "$LIBC" | awk '$2 == "T" || $2 == "t" { print $1 }' | sort -u |
    head -n 1000 >"$T/functions"
[ "$(wc -l <"$T/functions")" = 1000 ] || fail "libc exports fewer than 1,000 functions"

python3 - "$T" "$LIBC" "$id" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
T, libc, build_id = sys.argv[1:]
offsets = [int(l, 16) + 4 for l in open(os.path.join(T, "functions"))]
STEP = 1 << 32

def trace(name, nmodules, ips):
    """nmodules records of libc, each at its own addresses; stack k is offset ips[k] in
    module k % nmodules."""
    base = [0x100000000000 + i * STEP for i in range(nmodules)]
    mods = [(i, b, b, b + 0x1000000, build_id, libc) for i, b in enumerate(base)]
    recs = mktrace.prelude(0, 0, modules=mods)
    recs += [["stack", k + 1, [base[k % nmodules] + off]] for k, off in enumerate(ips)]
    recs += [["thread", 1], ["epoch", 0]]
    recs += [["alloc", 0, 0x10000000 + 64 * k, 32, 0, k + 1] for k in range(len(ips))]
    recs.append(["exit", 1, 0])
    data = mktrace.build({"segments": [{"seq": 0, "records": recs}]})
    open(os.path.join(T, name), "wb").write(data)
    return len(data)

trace("prime.trace", 1, offsets)             # fills the symbol cache with 1,000 entries
trace("one.trace", 1, offsets[:1])
size = trace("many.trace", 4096, [offsets[k % 1000] for k in range(4096)])
print("many.trace: %d bytes, 4,096 records of %s" % (size, libc))
PY

# run NAME TRACE: the analyzer's JSON report into NAME.json under a 1 GB address-space limit
# and 120 s of CPU; its peak RSS in KB into NAME.kb.  Every record read alone reaches the
# limit long before its time is up.
run() {
    python3 - "$ANALYZE" "$T/$2" "$T/$1" <<'PY' || fail "$1: $(tail -n 1 "$T/$1.err")"
import resource, subprocess, sys
analyze, trace, out = sys.argv[1:]
def limits():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    resource.setrlimit(resource.RLIMIT_CPU, (120, 120))
with open(out + ".json", "wb") as o, open(out + ".err", "wb") as e:
    status = subprocess.run([analyze, "--json", trace], stdout=o, stderr=e,
                            preexec_fn=limits).returncode
if status:
    open(out + ".err", "a").write("exit status %d\n" % status)
    sys.exit(1)
open(out + ".kb", "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}

# a cold run (no symbol cache), then warm ones: each record's addresses in the cache file
export CHURN_SYMBOL_CACHE=off
run one_cold one.trace
run many_cold many.trace
export CHURN_SYMBOL_CACHE="$T/cache"
run prime prime.trace
[ -n "$(ls "$T/cache")" ] || fail "the priming run wrote no symbol cache"
run one_warm one.trace
run many_warm many.trace

check "$T" <<'PY'
import json, re, sys
T = sys.argv[1]
def kb(name):
    return int(open("%s/%s.kb" % (T, name)).read())
def frames(name):
    d = json.load(open("%s/%s.json" % (T, name)))
    return {c["stack_id"]: c["stack"] for c in d["growth"]}, d["warnings"]

# every record's frames are its own function, with its file:line, as in the priming run
prime, _ = frames("prime")
for name in ("many_cold", "many_warm"):
    got, warnings = frames(name)
    if len(got) != 4096:
        sys.exit("FAIL: %s: %d callsites, want 4096" % (name, len(got)))
    for sid, stack in got.items():
        want = prime[(sid - 1) % 1000 + 1]
        if stack != want:
            sys.exit("FAIL: %s: stack %d is %s, want %s" % (name, sid, stack, want))
    lines = sum(1 for s in got.values() if re.search(r"\(.*:[0-9]+\)$", s[0]))
    if lines < 4000:
        sys.exit("FAIL: %s: %d of 4096 frames with a file:line" % (name, lines))
for cold, warm in (("one_cold", "many_cold"), ("one_warm", "many_warm")):
    a, b = kb(cold), kb(warm)
    print("peak RSS: %s %d KB, %s %d KB" % (cold, a, warm, b))
    if b - a > 64 << 10:
        sys.exit("FAIL: 4,096 records of one file take %d KB more than one (%s: %d KB, %s: "
                 "%d KB): want at most 64 MB more" % (b - a, cold, a, warm, b))
PY
echo "PASS: t_analyzer_shared_modules"
