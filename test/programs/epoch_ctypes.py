# Epochs from Python through ctypes, under LD_PRELOAD=libchurn.so: churn_epoch_begin is a
# symbol of the process, found with dlsym.  Epoch i (1..N) keeps i bytearrays of 5000 bytes
# (above pymalloc's 512-byte limit: each buffer is one malloc of 5001 bytes) in a list made
# beforehand; prints each epoch number returned.  One more epoch holds the interpreter's exit.
import ctypes
import sys

n = int(sys.argv[1])
begin = ctypes.CDLL(None).churn_epoch_begin
begin.restype = ctypes.c_uint64
kept = [None] * (n * (n + 1) // 2)
j = 0
for i in range(1, n + 1):
    print("epoch %d" % begin(), flush=True)
    for _ in range(i):
        kept[j] = bytearray(5000)
        j += 1
begin()
