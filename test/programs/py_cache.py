"""A request loop whose handler fills a dict cache: every request keeps one entry, a string of
about 50 bytes under an int key, put there by remember().  Each request begins with SIGUSR2
to itself (an epoch under CHURN_EPOCH_SIGNAL=USR2).  With "tracemalloc" as the second
argument it is not signalled: tracemalloc runs, and the script prints the file and line of
the allocations that grew most over the requests, "FILE:LINE", then the line range of
remember() in this file, "FIRST LAST"."""
import os
import signal
import sys

requests = int(sys.argv[1])
tracing = len(sys.argv) > 2 and sys.argv[2] == "tracemalloc"
cache = {}


def remember(key, request):
    cache[key] = ("payload-%d-" % request) * 4


def handle(request):
    remember(request, request)


if tracing:
    import inspect
    import tracemalloc
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
for request in range(requests):
    if not tracing:
        os.kill(os.getpid(), signal.SIGUSR2)
    handle(request)
if tracing:
    top = tracemalloc.take_snapshot().compare_to(before, "lineno")[0]
    frame = top.traceback[0]
    print("%s:%d" % (frame.filename, frame.lineno))
    lines, first = inspect.getsourcelines(remember)
    print(first, first + len(lines) - 1)
else:
    print(len(cache))
