"""Python frames on several threads at once: four threads each run a generator that builds
strings through nested calls, one of them raising and catching an exception a turn, and
the main thread sums what they made.  Prints the same total traced or not."""
import threading

results = [0] * 4


def pieces(n, k):
    for i in range(n):
        yield ("%d-%d-" % (k, i)) * 3


def worker(k):
    total = 0
    for turn in range(300):
        kept = [p for p in pieces(20, k)]
        try:
            if k == 1:
                raise ValueError(kept[0])
        except ValueError as e:
            total += len(str(e))
        total += sum(len(p) for p in kept)
    results[k] = total


threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(sum(results))
