"""Dict and string churn for the benchmarks and the heaptrack count test.

Run it as `PYTHONMALLOC=malloc PYTHONHASHSEED=0 /usr/bin/python3 bench/python_churn.py ROUNDS`
so that every Python object goes through malloc/realloc/free where a tracer can see it.
Each round builds a small "request": a dict of formatted strings, a joined body, a parsed
copy, and leaves a few of its strings in a bounded cache so that some objects outlive their
round (the cache evicts the oldest entries, so the live set stays flat).  No randomness: the
same ROUNDS gives the same sequence of allocation calls on every run (hash seed pinned by the
caller).  About 112 allocation calls per round after ~23,000 for start-up: 40,000 rounds
make 4.5 million (heaptrack counted 4,503,555), 5,000 rounds about 583,000.
"""
import sys

CACHE_LIMIT = 2000


def one_round(i, cache, order):
    headers = {}
    for k in range(6):
        headers["x-header-%d-%d" % (k, i)] = "value-%d" % (i * 7 + k)
    body = ";".join("%s=%s" % kv for kv in headers.items())
    parsed = dict(part.split("=", 1) for part in body.split(";"))
    key = "req-%d" % i
    cache[key] = body.upper()
    order.append(key)
    if len(order) > CACHE_LIMIT:
        del cache[order.pop(0)]
    return len(parsed) + len(body)


def main():
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.stderr.write("usage: python_churn.py ROUNDS\n")
        sys.exit(2)
    rounds = int(sys.argv[1])
    cache = {}
    order = []
    total = 0
    for i in range(rounds):
        total += one_round(i, cache, order)
    print("rounds=%d checksum=%d cached=%d" % (rounds, total, len(cache)))


if __name__ == "__main__":
    main()
