#!/bin/sh
# Bad input: unusable files end with exit 1 and exactly one line "churn-analyze: FILE: reason";
# partly damaged files give warnings and a report from the good segments; usage errors exit 2
# with one line too.
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh

python3 - "$WORK" <<'PY'
import json, os, sys
sys.path.insert(0, "test/tools")
import mktrace
T = sys.argv[1]

def segment(seq, nallocs=3, extra=()):
    recs = mktrace.prelude(seq, seq, carry=(seq * nallocs, seq * nallocs * 32, []))
    recs += [["stack", 5, [0x1000]], ["thread", 1], ["epoch", seq]]
    for i in range(nallocs):
        recs.append(["alloc", 0, 0x100000 + seq * 0x1000 + i * 64, 32, 0, 5])
    recs += list(extra)
    return {"seq": seq, "first_epoch": seq, "last_epoch": seq, "records": recs}

def write(name, desc):
    open(os.path.join(T, name), "wb").write(mktrace.build(desc))

good = {"segments": [segment(0), segment(1), segment(2, extra=[["exit", 1, 0]])]}
write("good", good)
open(os.path.join(T, "empty"), "wb").close()
open(os.path.join(T, "text"), "w").write("this is not a trace at all, just some text\n" * 4)
write("version", dict(good, header={"version": 9}))
write("magic", dict(good, header={"magic": "CHURNTRX"}))
write("headercrc", dict(good, damage=[{"flip": 40}]))
write("short", dict(good, damage=[{"truncate": 30}]))
write("nosegment", {"segments": [segment(0)], "damage": [{"flip": -5}]})
write("headeronly", {"segments": []})
# Damaged but usable.
write("truncated", dict(good, damage=[{"truncate": -7}]))            # last segment cut
write("flipped", dict(good, damage=[{"flip": -3}]))                  # last segment's payload
segs = [mktrace.segment_bytes(s) for s in good["segments"]]
mid = 56 + len(segs[0]) + 70
write("flipped_middle", dict(good, damage=[{"flip": mid}]))          # segment 1: a gap
write("garbage", dict(good, layout=[{"garbage": 100}, 0, {"garbage": 33}, 1, 2, {"garbage": 9}]))
bad_tag = segment(2, extra=[["raw", "ee0102"]])
write("malformed", {"segments": [segment(0), segment(1), bad_tag]})
huge = segment(2, extra=[["raw", "03" "05" "ffffffffffffffff7f"]])   # stack depth 2^63-1
write("hugecount", {"segments": [segment(0), segment(1), huge]})
# a stack sharing frames with one never defined, and one sharing more frames than it has
noref = segment(2, extra=[["stack_ref", 6, 3, 0, 77, 2, [0x2000]]])
write("stackref", {"segments": [segment(0), segment(1), noref]})
deep = segment(2, extra=[["stack_ref", 6, 4, 0, 5, 3, [0x2000]]])
write("stackshared", {"segments": [segment(0), segment(1), deep]})
liar = segment(2)
liar["raw_bytes"] = 1 << 20                                          # header says more than there is
write("rawliar", {"segments": [segment(0), segment(1), liar]})
big = segment(2)
big["raw_bytes"] = (64 << 20) + 1                                    # above CHURN_SEGMENT_MAX_RAW
write("rawcap", {"segments": [segment(0), segment(1), big]})
# a zstd bomb: a few KiB that inflate to 256 MiB, in a segment claiming a small raw size
import subprocess
bomb = subprocess.run(["zstd", "-19", "-q", "-c"], input=b"\0" * (256 << 20),
                      stdout=subprocess.PIPE, check=True).stdout
boom = segment(2)
boom["payload_hex"] = bomb.hex()
boom["raw_bytes"] = 4096
write("bomb", {"segments": [segment(0), segment(1), boom]})
# two traces in one file (cat a b): another pid, the same pid started at another time, and
# the same trace twice
other = mktrace.build(dict(good, header={"pid": 999}))
later = mktrace.build(dict(good, header={"start_realtime_ns": 12345}))
for name, second in (("concat", other), ("concat_restart", later),
                     ("concat_self", mktrace.build(good))):
    open(os.path.join(T, name), "wb").write(mktrace.build(good) + second)
# allocations naming a stack the trace never defines
write("nostack", {"segments": [segment(0), segment(1),
                               segment(2, extra=[["alloc", 0, 0x900000, 16, 0, 99]])]})
PY

# fatal FILE REASON-PATTERN
fatal() {
    f="$WORK/$1"
    set +e
    "$ANALYZE" --json "$f" >"$WORK/stdout" 2>"$WORK/stderr"
    rc=$?
    set -e
    [ "$rc" = 1 ] || fail "$1: exit $rc, want 1"
    [ ! -s "$WORK/stdout" ] || fail "$1: wrote a report"
    [ "$(wc -l <"$WORK/stderr")" = 1 ] || fail "$1: stderr is not one line: $(cat "$WORK/stderr")"
    grep -q "^churn-analyze: $f: $2" "$WORK/stderr" || fail "$1: message '$(cat "$WORK/stderr")' lacks '$2'"
}
fatal missing "No such file"
fatal empty "empty file"
fatal text "not a churn trace"
fatal version "unsupported trace format version 9"
fatal magic "not a churn trace"
fatal headercrc "corrupt file header"
fatal short "not a churn trace"
fatal nosegment "no valid segment"
fatal headeronly "no valid segment"
n=$(wc -c <"$WORK/good")
fatal concat "another trace starts at byte $n (pid 999; this one is pid 4242): concatenated traces"
fatal concat_restart "another trace starts at byte $n (pid 4242, another start time; this one is pid 4242)"
fatal concat_self "a second copy of its file header at byte $n: concatenated traces"

# usable FILE SEGMENTS-USED ALLOCS WARNING-PATTERN
usable() {
    f="$WORK/$1"
    "$ANALYZE" --json "$f" >"$WORK/$1.json" 2>"$WORK/stderr" || fail "$1: exit $?, want 0"
    [ ! -s "$WORK/stderr" ] || fail "$1: stderr not empty: $(head -1 "$WORK/stderr")"
    python3 - "$WORK/$1.json" "$1" "$2" "$3" "$4" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
name, used, allocs, pattern = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
def fail(msg):
    print("t_analyzer_badinput: %s: %s" % (name, msg))
    sys.exit(1)
if d["metadata"]["segments_used"] != used:
    fail("segments_used %s, want %d" % (d["metadata"]["segments_used"], used))
if d["totals"]["allocs"] != allocs:
    fail("allocs %s, want %d" % (d["totals"]["allocs"], allocs))
if pattern and not any(re.search(pattern, w) for w in d["warnings"]):
    fail("no warning matching %r in %s" % (pattern, d["warnings"]))
if not pattern and d["warnings"]:
    fail("unexpected warnings %s" % d["warnings"])
PY
}
usable good 3 9 ""
usable truncated 2 6 "damaged segment"
usable flipped 2 6 "damaged segment"
usable flipped_middle 1 3 "older segment.*not used"
usable garbage 3 9 ""
usable malformed 3 9 "segment 2: malformed record \\(tag 0xee\\)"
usable hugecount 3 9 "segment 2: malformed record \\(tag 0x03\\)"
usable stackref 3 9 "segment 2: malformed record \\(tag 0x03\\)"
usable stackshared 3 9 "segment 2: malformed record \\(tag 0x03\\)"
usable rawliar 3 6 "segment 2: decompression failed"
usable rawcap 2 6 "damaged segment"
usable bomb 3 6 "segment 2: decompression failed"
usable nostack 3 10 "stack.*(not|never).*(defined|in the trace)"

# Usage errors: exit 2.
for args in "" "--bogus $WORK/good" "--epochs 5:3 $WORK/good" "--epochs x $WORK/good" \
            "--epochs 1-2 $WORK/good" "--top -1 $WORK/good" "$WORK/good $WORK/good" "--epochs"; do
    set +e
    # shellcheck disable=SC2086
    "$ANALYZE" $args >/dev/null 2>"$WORK/stderr"
    rc=$?
    set -e
    [ "$rc" = 2 ] || fail "'$args': exit $rc, want 2"
    grep -q "^churn-analyze: .* (churn-analyze --help lists the options)$" "$WORK/stderr" ||
        fail "'$args': no message: $(head -1 "$WORK/stderr")"
    [ "$(wc -l <"$WORK/stderr")" = 1 ] || fail "'$args': stderr is not one line: $(cat "$WORK/stderr")"
done
exit 0
