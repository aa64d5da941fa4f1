#!/bin/sh
# The live follower (analyzer/live/tail.c, that of churn watch and churn serve) starts its
# state over only at a key segment (format 8, docs/format.md): test/programs/tail_follow.c
# follows a synthetic trace (test/tools/mktrace.py) that changes under it:
#  1. key segment 0 and delta segment 1: both begin, 0 as the start;
#  2. then delta segment 2 whose payload does not inflate, delta 3, key 4, delta 5: 2 is
#     reported damaged, 3 is passed over (its stacks may be defined in 2) and said so, the
#     state starts over at 4 (found by the scan that a file changing with nothing new to read
#     brings after 2 s);
#  3. the ring overwritten from its start by delta 8, key 9, delta 10 (6 and 7 lost): the
#     state starts over at 9, the newest key segment, not at 10.
LIB_ANALYZER_ONLY=1
. test/lib.sh

gcc -O1 -g -std=gnu11 -D_GNU_SOURCE -Iinclude -Ianalyzer -o "$WORK/tail_follow" \
    test/programs/tail_follow.c analyzer/live/tail.c analyzer/base/*.c analyzer/read/*.c \
    analyzer/heap/*.c -lzstd -lpthread -lm 2>"$WORK/build.log" ||
    fail "cannot build tail_follow: $(head -1 "$WORK/build.log")"

check "$WORK" <<'PY'
import os, subprocess, sys
sys.path.insert(0, "test/tools")
import mktrace
from churncheck import fail
W = sys.argv[1]
path = os.path.join(W, "ring.zst")
KEYS = (0, 4, 9)

def segment(s, damaged=False):
    key = s in KEYS
    recs = mktrace.prelude(s, s, carry=(s, 32 * s, [[5, s, 32 * s]] if key and s else []))
    if key:
        recs.append(["stack", 5, [0x1000, 0x2000]])
    recs += [["thread", 1], ["epoch", s], ["alloc", 0, 0x100000 + s * 64, 32, 0, 5],
             ["epoch_end", {"epoch": s, "allocs": 1, "alloc_bytes": 32,
                            "live_count": s + 1, "live_bytes": 32 * (s + 1)}]]
    seg = {"seq": s, "version": 8, "first_epoch": s, "last_epoch": s, "delta": not key,
           "records": recs}
    if damaged:  # a zstd frame's magic, then bytes that are no frame; its checksum right
        seg["payload_hex"] = "28b52ffd" + "a5" * 40
    return seg

def write(segs, layout=None):
    desc = {"header": {"version": 8, "ring_bytes": 1 << 20}, "segments": segs}
    if layout:
        desc["layout"] = layout
    data = mktrace.build(desc)
    with open(path, "r+b" if os.path.exists(path) else "wb") as f:
        f.write(data)  # in place, as the writer does: the file keeps its inode

follower = subprocess.Popen([os.path.join(W, "tail_follow"), path], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)

def poll(seconds):
    follower.stdin.write("%g\n" % seconds)
    follower.stdin.flush()
    out = []
    for line in follower.stdout:
        line = line.rstrip("\n")
        if line == "idle":
            return out
        if line.startswith("failed"):
            fail("the follower failed: " + line)
        out.append(line)
    fail("the follower ended: %s" % out)

def begins(lines):
    return [l for l in lines if l.startswith("begin")]

write([segment(0), segment(1)])
got = poll(3)
if begins(got) != ["begin 0 key restart", "begin 1 delta on"]:
    fail("phase 1: %s" % got)

phase2 = [segment(s, damaged=s == 2) for s in range(6)]
write(phase2)
got = poll(1)
write(phase2)  # the file changes on (the writer's next checkpoint): the follower looks again
got += poll(5)
if begins(got) != ["begin 2 delta on", "begin 4 key restart", "begin 5 delta on"]:
    fail("phase 2: after damaged segment 2 the follower did not start over at key segment 4: "
         "%s" % got)
warned = [l for l in got if l.startswith("warning")]
if not any("segment 2:" in w and "next key segment" in w for w in warned) or \
        not any("delta segments 3..3 not read" in w for w in warned):
    fail("phase 2: warnings %s" % warned)

write([segment(s) for s in (8, 9, 10)])
got = poll(5)
if begins(got) != ["begin 9 key restart", "begin 10 delta on"]:
    fail("phase 3: after the ring went round the follower did not start over at key segment "
         "9: %s" % got)
follower.stdin.close()
follower.wait()
print("follower: starts over at key segments 4 and 9")
PY
echo PASS
