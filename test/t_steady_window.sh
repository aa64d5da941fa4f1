#!/bin/sh
# The steady window (docs/analyzer.md, "The steady window"): without --epochs, the slopes and
# the rankings are fitted over the epochs between the start-up and the teardown, found from
# the live bytes and RSS series themselves, and the report names the window in one line with
# the options that change it.  A synthetic trace: three epochs of start-up that allocate
# 300 KiB each and keep it, fifty epochs that leak 64 bytes each, four epochs of teardown that
# free the start-up's blocks, and the exit's epoch.  The window must start within the
# start-up's last epoch (its end is already on the steady line) and end at the last leaking
# epoch: the leak fits 64 B/epoch exactly and leads the rankings, and the start-up's callsite
# neither grows nor leads.  --all-epochs and --epochs still fit what they name.  A growth
# that starts halfway, and one that speeds up at the end, keep their last epochs: growth is
# never taken for a teardown.
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh

# mk NAME SHAPE: a trace of SHAPE (phases, late, faster) into $WORK/NAME.zst
mk() {
    python3 - "$WORK/$1.zst" "$2" <<'PY'
import sys
sys.path.insert(0, "test/tools")
import mktrace
out, shape = sys.argv[1], sys.argv[2]
recs = mktrace.prelude(0, 0) + [["stack", 7, [0x1010]], ["stack", 9, [0x2020]], ["thread", 1]]
live = {}        # addr -> (size, stack, epoch)
addr = [0x100000]

def alloc(e, size, stack):
    addr[0] += 0x10000 if size > 4096 else 0x100
    live[addr[0]] = (size, stack, e)
    recs.append(["alloc", 0, addr[0], size, 0, stack])

def free(e, a):
    size, stack, born = live.pop(a)
    recs.append(["free_full", 0, a, size, 0, stack, e - born])

def end(e):
    lb = sum(s for s, _, _ in live.values())
    rss = 8 << 20
    rss += (lb + 4095) // 4096 * 4096
    recs.append(["epoch_end", {"epoch": e, "wall_ns": 1000000, "rss": rss,
                               "live_count": len(live), "live_bytes": lb}])

if shape == "phases":
    epochs = 58
    for e in range(epochs):
        recs.append(["epoch", e])
        if e < 3:
            alloc(e, 300 << 10, 9)
        elif e < 53:
            alloc(e, 64, 7)
        elif e < 57:
            big = sorted(a for a, (s, _, _) in live.items() if s > 4096)
            for a in big[: max(1, len(big) // (57 - e))]:
                free(e, a)
        else:   # the exit's epoch: everything goes
            for a in list(live):
                free(e, a)
        end(e)
else:
    epochs = 61
    for e in range(epochs):
        recs.append(["epoch", e])
        if shape == "late" and e >= 30 and e < 60:
            alloc(e, 64, 7)
        if shape == "faster" and e < 60:
            for _ in range(1 if e < 50 else 4):
                alloc(e, 64, 7)
        if e == 60:
            for a in list(live):
                free(e, a)
        end(e)
recs.append(["exit", 1, 0])
open(out, "wb").write(mktrace.build(
    {"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": epochs - 1, "records": recs}]}))
PY
}

mk phases phases
mk late late
mk faster faster
for name in phases late faster; do
    analyze "$WORK/$name.zst" "$WORK/$name.json"
done
analyze "$WORK/phases.zst" "$WORK/phases.all.json" --all-epochs
analyze "$WORK/phases.zst" "$WORK/phases.opt.json" --epochs 10:40
"$ANALYZE" "$WORK/phases.zst" >"$WORK/phases.txt" 2>&1 || fail "churn-analyze phases.zst failed"
"$ANALYZE" --all-epochs "$WORK/phases.zst" >"$WORK/phases.all.txt" 2>&1 ||
    fail "churn-analyze --all-epochs phases.zst failed"

check "$WORK/phases.json" "$WORK/phases.all.json" "$WORK/phases.opt.json" "$WORK/late.json" \
    "$WORK/faster.json" "$WORK/phases.txt" "$WORK/phases.all.txt" <<'PY'
import re, sys
from churncheck import *
steady, whole, opt, late, faster = (load(p) for p in sys.argv[1:6])
text, whole_text = open(sys.argv[6]).read(), open(sys.argv[7]).read()

w = field(steady, "steady_window")
if field(w, "how") != "found":
    fail("the default window was not found from the series: %r" % w)
if field(w, "first") not in (2, 3) or field(w, "last") != 52:
    fail("steady window %d..%d, expected 2 or 3 .. 52 (start-up 0..2, teardown 53..56, exit 57)"
         % (w["first"], w["last"]))
if not field(w, "start_up") or field(w, "start_up")[0] != 0:
    fail("the start-up is not named: %r" % w)
expect("teardown", field(w, "teardown"), [53, 56])
expect("exit's epoch", field(w, "exit_epoch"), 57)

leak = [g for g in field(steady, "growth") if g["stack_id"] == 7][0]
if abs(leak["bytes_per_epoch"] - 64) > 1e-6 or abs(leak["r2"] - 1) > 1e-9:
    fail("the leak over the steady window: %r B/epoch, r2 %r; expected 64, 1"
         % (leak["bytes_per_epoch"], leak["r2"]))
expect("the first growth row", field(steady, "growth")[0]["stack_id"], 7)
expect("the first function row's growth", round(field(steady, "functions")[0]["bytes_per_epoch"]), 64)
big = [g for g in field(steady, "growth") if g["stack_id"] == 9][0]
if abs(big["bytes_per_epoch"]) > 1e-6:
    fail("the start-up's callsite grows %r B/epoch over the steady window" % big["bytes_per_epoch"])
if abs(field(steady, "trends", "live_bytes_per_epoch") - 64) > 1e-6:
    fail("trends.live_bytes_per_epoch %r over the steady window, not 64"
         % steady["trends"]["live_bytes_per_epoch"])

# --all-epochs: every epoch but the exit's, whose start-up dominates
ww = field(whole, "steady_window")
expect("--all-epochs window", (ww["how"], ww["first"], ww["last"]), ("--all-epochs", 0, 56))
if abs(whole["trends"]["live_bytes_per_epoch"] - 64) < 100:
    fail("--all-epochs gives %r B/epoch: the start-up and teardown are not in it"
         % whole["trends"]["live_bytes_per_epoch"])
ow = field(opt, "steady_window")
expect("--epochs window", (ow["how"], ow["first"], ow["last"]), ("--epochs", 10, 40))
if abs(field(opt, "trends", "live_bytes_per_epoch") - 64) > 1e-6:
    fail("--epochs 10:40 gives %r B/epoch" % opt["trends"]["live_bytes_per_epoch"])

# Totals and what is live at the end stay the whole trace's: only fits use the window.
expect("allocations counted", field(steady, "totals", "allocs"), 53)
expect("live at the end", field(steady, "leaked_at_exit", "count"), 0)

# growth that starts halfway, or speeds up at the end, is kept to the last epoch
for name, report in (("late", late), ("faster", faster)):
    lw = field(report, "steady_window")
    if lw["last"] != 59:
        fail("%s: the window ends at %d, not 59: growth taken for a teardown" % (name, lw["last"]))
    if lw["teardown"] is not None:
        fail("%s: a teardown %r" % (name, lw["teardown"]))

# the text names the window in one line, with the options that change it
lines = [l for l in text.splitlines() if l.startswith("Steady window: ")]
if len(lines) != 1:
    fail("not one 'Steady window:' line in the text report: %r" % lines)
line = lines[0]
if not re.match(r"Steady window: epochs %d\.\.52 " % w["first"], line) or "--epochs" not in line \
        or "--all-epochs" not in line or "start-up 0.." not in line or "teardown 53..56" not in line:
    fail("the window's line: %r" % line)
if "Steady window: epochs 0..56 (every epoch but the exit's: --all-epochs)" not in whole_text:
    fail("--all-epochs: the window's line is not 'Steady window: epochs 0..56 (every epoch but "
         "the exit's: --all-epochs)': %r" % [l for l in whole_text.splitlines() if "Steady" in l])
print("steady window %d..52 of 0..57: leak 64 B/epoch (whole run %.0f); late and faster growth kept"
      % (w["first"], whole["trends"]["live_bytes_per_epoch"]))
PY

echo "ok: the steady window leaves out start-up and teardown, never growth; options override it"
