#!/bin/sh
# mmap, munmap, mremap, madvise and sbrk under the shim (test/programs/maps.c): the program
# must work unchanged, and every call it made must be in the trace as a page-level record
# (decoded here from the trace itself) with its address and length.  The analyzer's JSON
# does not have to report maps; the log says whether it does.
. test/lib.sh

build_c maps test/programs/maps.c
traced "$WORK/trace.zst" "$WORK/out" "$WORK/maps"
analyze "$WORK/trace.zst" "$WORK/report.json"

check "$WORK/report.json" "$WORK/out" "$WORK/trace.zst" <<'PY'
import sys
from churncheck import *
report, ph = load(sys.argv[1]), phases(sys.argv[2])

def keys(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield path + k
            yield from keys(v, path + k + ".")
    elif isinstance(obj, list) and obj:
        yield from keys(obj[0], path + "[].")

map_keys = [k for k in keys(report) if any(w in k.lower() for w in ("map", "brk", "madvise"))]
print("analyzer JSON keys about page-level calls: %s" % (map_keys or "none (not reported)"))

maps = [r for r in records(sys.argv[3]) if r["tag"] & 0xF0 == 0x40]
kinds = {"mmap": 0, "filemap": 0, "munmap": 1, "mremap": 2, "madvise": 3, "brk": 4}
for line in open(sys.argv[2]):
    if not line.startswith("call "):
        continue
    words = line.split()
    name, nums = words[1], [int(w) for w in words[2:]]
    def matches(r):
        if r["kind"] != kinds[name] or r["address"] != nums[0]:
            return False
        if name == "brk":
            return True
        if name == "mremap":
            return r["b"] == nums[2] and r["length"] in (nums[1], nums[3])
        if r["length"] != nums[1]:
            return False
        return name in ("munmap",) or r["a"] == nums[2]
    found = [r for r in maps if matches(r)]
    if not found:
        near = [(r["kind"], hex(r["address"]), r["length"], r["a"], r["b"]) for r in maps
                if r["kind"] == kinds[name]]
        fail("no map record for `%s` (kind %d, address 0x%x); records of that kind "
             "(kind, address, length, a, b): %s" % (line.strip(), kinds[name], nums[0], near[:6]))
    if any(r["internal"] for r in found):
        fail("the program's own call `%s` is flagged internal" % line.strip())
expect("totals.map_calls against the map records in the trace",
       field(report, "totals", "map_calls"), len(maps))
print("all %d page-level calls of the program found in the trace"
      % sum(1 for l in open(sys.argv[2]) if l.startswith("call ")))
PY
