"""Keeps 20,000 tuples (turn, j, float(j)) a turn, TURNS turns: 800,000 small objects and
their numbers over 40 turns, all from pymalloc.  Each turn begins with SIGUSR2 to itself (an
epoch under CHURN_EPOCH_SIGNAL=USR2), or with "tracemalloc" as the second argument, with a
reading of the bytes tracemalloc traces and of the blocks pymalloc hands out
(sys.getallocatedblocks(): its own and those it takes from malloc); it then prints each
turn's growth by those two, "bytes blocks" a line.  The readings go into arrays made
beforehand, so that taking them keeps nothing."""
import array
import os
import signal
import sys

turns = int(sys.argv[1])
tracing = len(sys.argv) > 2 and sys.argv[2] == "tracemalloc"
traced_bytes = array.array("q", [0] * turns)
traced_blocks = array.array("q", [0] * turns)
if tracing:
    import tracemalloc
    tracemalloc.start()
keep = []


def fill(turn):
    keep.append([(turn, j, float(j)) for j in range(20000)])


for turn in range(turns):
    if tracing:
        traced_bytes[turn] = tracemalloc.get_traced_memory()[0]
        traced_blocks[turn] = sys.getallocatedblocks()
    else:
        os.kill(os.getpid(), signal.SIGUSR2)
    fill(turn)
if tracing:
    for turn in range(1, turns):
        print(traced_bytes[turn] - traced_bytes[turn - 1],
              traced_blocks[turn] - traced_blocks[turn - 1])
else:
    print(sum(len(k) for k in keep))
