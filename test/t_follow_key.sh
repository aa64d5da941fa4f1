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
#     state starts over at 9, the newest key segment, not at 10;
#  4. a second follower held inside a poll right after it began segment 2 of 0..2 (as one
#     stopped by SIGSTOP, or not run for a while on a busy machine, finds the file): meanwhile
#     the ring went round, leaving delta 10 at its start, 2 in its place and key 9 after it,
#     past the end of the file the poll looked at.  Let go, it must start over at 9 and read
#     10 within that poll, not scan again and again for a segment it cannot see.
LIB_ANALYZER_ONLY=1
. test/lib.sh

gcc -O1 -g -std=gnu11 -D_GNU_SOURCE -Iinclude -Ianalyzer -o "$WORK/tail_follow" \
    test/programs/tail_follow.c analyzer/live/tail.c analyzer/base/*.c analyzer/read/*.c \
    analyzer/heap/*.c -lzstd -lpthread -lm 2>"$WORK/build.log" ||
    fail "cannot build tail_follow: $(head -1 "$WORK/build.log")"

check "$WORK" <<'PY'
import atexit, os, queue, subprocess, sys, threading, time
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

def build(segs, layout=None):
    desc = {"header": {"version": 8, "ring_bytes": 1 << 20}, "segments": segs}
    if layout:
        desc["layout"] = layout
    return mktrace.build(desc)

def write(segs, layout=None, to=path):
    data = build(segs, layout)
    with open(to, "r+b" if os.path.exists(to) else "wb") as f:
        f.write(data)  # in place, as the writer does: the file keeps its inode

class Follower:
    def __init__(self, trace, *hold):
        self.p = subprocess.Popen([os.path.join(W, "tail_follow"), trace] + [str(h) for h in hold],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        atexit.register(self.p.kill)  # one stuck in a poll must not outlive the test
        self.lines = queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.p.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def until(self, last, within):
        """Its lines up to the line `last`, which must come within `within` seconds."""
        out, end = [], time.monotonic() + within
        while True:
            try:
                line = self.lines.get(timeout=max(0, end - time.monotonic()))
            except queue.Empty:
                fail("no %r from the follower in %d s (a poll that does not end): %s"
                     % (last, within, out))
            if line is None:
                fail("the follower ended: %s" % out)
            if line.startswith("failed"):
                fail("the follower failed: " + line)
            if line == last:
                return out
            out.append(line)

    def close(self):
        self.p.stdin.close()
        self.p.wait()

follower = Follower(path)

def poll(seconds):
    follower.send("%g" % seconds)
    return follower.until("idle", seconds + 30)

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
follower.close()

held = os.path.join(W, "held.zst")
f = Follower(held, 2)
write([segment(0), segment(1)], to=held)
f.send("2")
if begins(f.until("idle", 30)) != ["begin 0 key restart", "begin 1 delta on"]:
    fail("phase 4: the held follower did not read segments 0 and 1")
write([segment(s) for s in range(3)], to=held)
f.send("3")
if begins(f.until("held", 30)) != ["begin 2 delta on"]:
    fail("phase 4: the follower did not begin segment 2")
ring = [segment(s) for s in (0, 1, 2, 9, 10)]  # 10 where 0 and 1 were, 2 in place, 9 after it
room = len(build(ring[:2])) - len(build(ring[4:]))
if room < 0:
    fail("phase 4: delta segment 10 does not fit where 0 and 1 were")
write(ring, layout=[4, {"garbage": room}, 2, 3], to=held)
f.send("go")
got = f.until("idle", 30)
if begins(got) != ["begin 9 key restart", "begin 10 delta on"]:
    fail("phase 4: held inside a poll while the ring went round, the follower did not start "
         "over at key segment 9: %s" % got)
f.close()
print("follower: starts over at key segments 4 and 9, and at 9 after being held in a poll")
PY
echo PASS
