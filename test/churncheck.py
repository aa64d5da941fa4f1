"""Assertions shared by the tests: reading churn-analyze --json reports, the phase lines the
test programs print, and the trace file itself (segment headers and records, decoded here
independently of the analyzer from include/churn/format.h, so a test can tell a shim bug
from an analyzer bug)."""

import json
import struct
import subprocess
import sys
import zlib

SKIPPABLE_MAGIC = 0x184D2A5C
SEGMENT_MAGIC = 0x47534843
SEGMENT_DELTA = 0x20000000
FILE_HEADER_BYTES = 56
SEGMENT_HEADER = struct.Struct("<IIIIQQQIIII")


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def expect(label, got, want):
    if got != want:
        fail("%s: got %r, expected %r" % (label, got, want))


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail("%s is not one JSON object: %s" % (path, e))


def field(obj, *keys):
    """obj[k1][k2]...; a missing key fails the test naming the path."""
    for key in keys:
        try:
            obj = obj[key]
        except (KeyError, IndexError, TypeError):
            fail("report has no %s" % ".".join(str(k) for k in keys))
    return obj


def phases(path):
    """The `phase NAME EPOCH` lines a test program prints, as {name: epoch}."""
    result = {}
    with open(path) as f:
        for line in f:
            words = line.split()
            if len(words) == 3 and words[0] == "phase":
                result[words[1]] = int(words[2])
    if not result:
        fail("%s has no phase lines" % path)
    if len(set(result.values())) != len(result):
        fail("phases share epoch numbers %s: churn_epoch_begin() did not reach the shim"
             % sorted(result.items()))
    return result


_epochs_cache = {}


def epochs(report):
    """{epoch number: epoch object}, built once per report."""
    key = id(report)
    if key not in _epochs_cache:
        _epochs_cache[key] = (report, {e["epoch"]: e for e in field(report, "epochs")})
    return _epochs_cache[key][1]


def epoch(report, number, what=""):
    by_number = epochs(report)
    if number not in by_number:
        fail("epoch %d (%s) missing from the report; epochs present: %s"
             % (number, what, summarize(sorted(by_number))))
    return by_number[number]


def summarize(numbers):
    if len(numbers) > 12:
        return "%s ... %s (%d)" % (numbers[:5], numbers[-5:], len(numbers))
    return str(numbers)


def expect_epoch(report, number, what, **want):
    """Asserts exact figures of one epoch, e.g. allocs=3, frees=2."""
    e = epoch(report, number, what)
    for key, value in want.items():
        expect("epoch %d (%s) %s" % (number, what, key), field(e, key), value)
    return e


def live_delta(report, number, what):
    """(live_count, live_bytes) at the end of epoch `number` minus at the end of the one
    before: the program does nothing between the two."""
    cur = epoch(report, number, what)
    prev = epoch(report, number - 1, "the epoch before " + what)
    return (cur["live_count"] - prev["live_count"], cur["live_bytes"] - prev["live_bytes"])


def expect_phases(report, out_path, what, count):
    """Every `expect` line a static_pattern.h program printed (test/programs): its phase's
    epoch has exactly those allocations, frees and bytes, and that live change; `count`
    phases.  Returns the phases' epochs, by name."""
    ph = phases(out_path)
    cases = [line.split()[1:] for line in open(out_path) if line.startswith("expect ")]
    expect("%s: number of phases" % what, len(cases), count)
    for name, *figures in cases:
        allocs, frees, alloc_bytes, free_bytes, live_count, live_bytes = map(int, figures)
        label = "%s %s" % (what, name)
        expect_epoch(report, ph[name], label, allocs=allocs, frees=frees,
                     alloc_bytes=alloc_bytes, free_bytes=free_bytes)
        expect("%s live (count, bytes) change" % label, live_delta(report, ph[name], label),
               (live_count, live_bytes))
    return ph


def growth_with(report, function):
    """The growth entries whose stack names `function` in one of its frames."""
    return [g for g in field(report, "growth")
            if any(function in frame for frame in g.get("stack", []))]


def window_rows(report):
    """The epochs rows of the report's steady window (the epochs its fits are over), which must
    be as many as the trends' rank correlation is over."""
    w = field(report, "steady_window")
    rows = [e for e in field(report, "epochs") if w["first"] <= e["epoch"] <= w["last"]]
    expect("epochs rows of the steady window %d..%d" % (w["first"], w["last"]), len(rows),
           field(report, "trends", "duration_vs_live_rank_rows"))
    return rows


def rank_correlation(report, key):
    """Spearman's rank correlation of the epochs' KEY (wall_ns, cpu_ns) with their live bytes,
    over the rows the analyzer's trends use (those of its steady window: as many as
    trends.duration_vs_live_rank_rows), ties sharing their average rank: computed here,
    independently of the analyzer."""
    rows = window_rows(report)

    def ranks(values):
        order = sorted(range(len(values)), key=lambda i: values[i])
        out, i = [0.0] * len(values), 0
        while i < len(order):
            j = i
            while j < len(order) and values[order[j]] == values[order[i]]:
                j += 1
            for k in range(i, j):
                out[order[k]] = (i + j + 1) / 2
            i = j
        return out

    a, b = ranks([e[key] for e in rows]), ranks([e["live_bytes"] for e in rows])
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    return cov / (sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b)) ** 0.5


def segment_headers(path, limit=None):
    """Every segment header whose magic and crc verify, with the offset and whether its zstd
    frame lies wholly within the first `limit` bytes (the whole file when None)."""
    with open(path, "rb") as f:
        data = f.read()
    if limit is None:
        limit = len(data)
    found = []
    pos = data.find(struct.pack("<I", SKIPPABLE_MAGIC))
    while pos >= 0:
        if pos + SEGMENT_HEADER.size <= len(data):
            fields = SEGMENT_HEADER.unpack_from(data, pos)
            # a key segment's, or (version 8) a delta one's with SEGMENT_DELTA set
            if fields[0] == SKIPPABLE_MAGIC and fields[2] & ~SEGMENT_DELTA == SEGMENT_MAGIC:
                raw = bytearray(data[pos:pos + SEGMENT_HEADER.size])
                raw[-4:] = b"\0\0\0\0"
                if crc32(bytes(raw)) == fields[10]:
                    end = pos + SEGMENT_HEADER.size + fields[8]
                    found.append({"offset": pos, "seq": fields[4], "first_epoch": fields[5],
                                  "last_epoch": fields[6], "raw_bytes": fields[7],
                                  "version": fields[3],
                                  "delta": bool(fields[2] & SEGMENT_DELTA),
                                  "zstd_bytes": fields[8], "end": end,
                                  "complete": end <= limit,
                                  "payload": data[pos + SEGMENT_HEADER.size:end]})
        pos = data.find(struct.pack("<I", SKIPPABLE_MAGIC), pos + 1)
    return found


def crc32(data):
    return zlib.crc32(data) & 0xFFFFFFFF


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def v(self):
        value = shift = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    def z(self):
        u = self.v()
        return (u >> 1) ^ -(u & 1)

    def bytes(self):
        n = self.v()
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


def records(path):
    """Every record of every complete segment, in sequence order, as dicts with `tag`, `kind`
    (the low nibble) and the fields of include/churn/format.h.  Heap event addresses are
    coded against per-segment state (include/churn/coding.h) and are left coded here; map
    records carry their absolute `address` (a delta against the previous map record's)."""
    segments = sorted((s for s in segment_headers(path) if s["complete"]),
                      key=lambda s: s["seq"])
    out = []
    for seg in segments:
        raw = subprocess.run(["zstd", "-dcq"], input=seg["payload"], stdout=subprocess.PIPE,
                             check=True).stdout
        try:
            out.extend(decode(raw, seg["seq"], seg["version"]))
        except IndexError:
            fail("segment %d of %s ends inside a record" % (seg["seq"], path))
    return out


STACK_REFS = 16


def decode(raw, seq, version=2):
    """A segment's records.  A STACK's "ips" are deltas (first against 0) of the whole stack,
    its frames shared with an earlier definition (version 2) filled in."""
    r = Reader(raw)
    recent = []  # (id, absolute ips) of the latest STACK_REFS definitions
    previous_map = 0
    info_stack = 0
    thread = 0
    epoch_tag = 0
    out = []
    while r.pos < len(raw):
        tag = r.data[r.pos]
        r.pos += 1
        cls = tag & 0xF0
        rec = {"tag": tag, "kind": tag & 0x0F, "segment": seq, "thread": thread,
               "epoch": epoch_tag}
        if tag == 0x01:
            rec.update(seq=r.v(), epoch=r.v(), ns=r.v())
        elif tag == 0x02:
            rec.update(id=r.v(), bias=r.v(), start=r.v(), end=r.v())
            rec["unloaded"] = r.v() if version >= 2 else 0
            rec.update(build_id=r.bytes(), path=r.bytes())
        elif tag == 0x03:
            rec["id"] = r.v()
            depth = r.v()
            rec["generation"] = r.v() if version >= 2 else None
            ref = r.v() if version >= 2 else 0
            shared = r.v() if ref else 0
            ips, ip = [], 0
            for _ in range(depth - shared):
                ip += r.z()
                ips.append(ip)
            if ref:
                outer = [s for i, s in recent if i == ref]
                if not outer or not 0 < shared <= min(depth, len(outer[-1])):
                    raise IndexError("STACK %d names %d, not one of the last %d stacks"
                                     % (rec["id"], ref, STACK_REFS))
                ips += outer[-1][len(outer[-1]) - shared:]
            if version >= 2:
                recent = (recent + [(rec["id"], ips)])[-STACK_REFS:]
            rec["ips"] = [b - a for a, b in zip([0] + ips[:-1], ips)]
        elif tag == 0x04:
            thread = rec["tid"] = r.v()
        elif tag == 0x05:
            epoch_tag = rec["epoch"] = r.v()
        elif tag == 0x06:
            rec["allocator"] = r.bytes()
            rec["page_size"] = r.v()
            rec["counters"] = [r.bytes() for _ in range(r.v())]
        elif tag == 0x0B:
            rec["size_classes"] = [(r.v(), r.v()) for _ in range(r.v())]
        elif tag == 0x0C:
            rec["stack_sample"] = r.v()
        elif tag == 0x0D:
            rec["short_stacks"] = r.v()
        elif tag == 0x0E:
            rec.update(stale_epoch=r.v(), age_ns=r.v())
        elif tag == 0x0F:
            rec["unordered"] = r.v()
        elif tag == 0x07:
            rec.update(live_count=r.v(), live_bytes=r.v())
            rec["stacks"], prev = [], 0
            for _ in range(r.v()):
                prev = (r.v() + (prev if version >= 7 else 0)) & (1 << 64) - 1
                rec["stacks"].append((prev, r.v(), r.v()))
        elif tag in (0x08, 0x09):
            rec.update(a=r.v(), b=r.v())
        elif tag == 0x0A:
            rec.update(size=r.v(), slack=r.v(), stack=r.v())
            if version >= 7:  # the stack id less the segment's previous info's
                d = rec["stack"]
                rec["stack"] = info_stack = (info_stack + ((d >> 1) ^ -(d & 1))) & (1 << 64) - 1
        elif cls == 0x10:
            rec.update(info=r.v(), address_code=r.v())
        elif cls == 0x20:
            rec.update(address_delta=r.z(), size=r.v(), slack=r.v(), stack=r.v(), age=r.v())
        elif tag == 0x30:
            rec["address_delta"] = r.z()
        elif cls == 0x40:
            previous_map += r.z()
            previous_map &= (1 << 64) - 1
            rec.update(address=previous_map, length=r.v(), a=r.v(), b=r.v(), stack=r.v(),
                       internal=bool(tag & 0x08), kind=tag & 0x07)
        elif cls == 0x60:
            rec["address_code"] = r.v()
        elif tag == 0x80:
            rec.update(start=r.v(), size=r.v(), name=r.bytes())
        elif tag == 0x81:
            rec.update(code_id=r.v(), name=r.bytes())
        elif tag == 0x50:
            names = ("epoch", "start_ns", "wall_ns", "cpu_ns", "rss", "allocs", "frees",
                     "alloc_bytes", "free_bytes", "late", "live_count", "live_bytes")
            rec.update({n: r.v() for n in names})
            rec["classes"] = [[r.v() for _ in range(5)] for _ in range(r.v())]
            rec["callsites"], prev = [], 0
            for _ in range(r.v()):
                row = [r.v() for _ in range(7)]
                if version >= 7:  # each stack id less the previous one, zigzagged
                    row[0] = prev = (prev + ((row[0] >> 1) ^ -(row[0] & 1))) & (1 << 64) - 1
                rec["callsites"].append(row)
            rec["counters"] = [r.v() for _ in range(r.v())]
        else:
            fail("segment %d: unknown record tag 0x%02x at offset %d" % (seq, tag, r.pos - 1))
        out.append(rec)
    return out


class _Addresses:
    """Heap event addresses as include/churn/coding.h codes them, rebuilt from the records of
    one segment (every segment starts the coder afresh)."""
    LIFO, FREED, ADJACENT = 4, 1024, 4
    EXPLICIT = LIFO + FREED + 2 * ADJACENT

    def __init__(self):
        self.prev = self.alloc_end = self.fresh_end = 0
        self.freed, self.lifos = [], {}

    def lifo(self, usable):
        return self.lifos.setdefault(((usable * 2654435761) & 0xFFFFFFFF) >> 22 & 1023, [])

    def alloc(self, code, usable):
        lifo = self.lifo(usable)
        if code < self.LIFO:
            addr = lifo.pop(code)
        elif code < self.LIFO + self.FREED:
            addr = self.freed[-1 - (code - self.LIFO)]
        elif code < self.LIFO + self.FREED + self.ADJACENT:
            addr = self.alloc_end + 8 * (code - self.LIFO - self.FREED)
        elif code < self.EXPLICIT:
            addr = self.fresh_end + 8 * (code - self.LIFO - self.FREED - self.ADJACENT)
        else:
            d = code - self.EXPLICIT
            addr = (self.prev + ((d >> 1) ^ -(d & 1))) & (1 << 64) - 1
        self.alloc_end = addr + usable
        if code >= self.LIFO + self.FREED:
            self.fresh_end = addr + usable
        self.prev = addr
        return addr

    def free(self, addr, usable):
        lifo = self.lifo(usable)
        lifo.insert(0, addr)
        del lifo[self.LIFO:]
        self.freed.append(addr)
        del self.freed[:-self.FREED]
        self.prev = addr


def heap_order(path):
    """Peak and temporary allocations recomputed from the trace's records in stream order,
    independently of the analyzer: {"peak": bytes, "peak_count", "peak_epoch", "temporary",
    "temporary_by_stack": {stack: n}, "peak_by_stack": {stack: (count, bytes)},
    "lowest_by_stack": {stack: fewest objects live}}.  A temporary allocation is one whose
    free, of the same address, is the stream's next heap event; a stack whose live count goes
    below zero had a free in the stream before its allocation."""
    live_bytes = live_count = 0
    by_stack = {}
    best = None
    temporary, temp_by_stack = 0, {}
    prev = None  # (address, size, stack, epoch) of the previous heap event if an allocation
    first = True
    lowest = {}
    coder = _Addresses()
    for rec in records(path):
        tag, cls = rec["tag"], rec["tag"] & 0xF0
        if tag == 0x01:
            infos, allocs, coder = [], [], _Addresses()
        elif tag == 0x07 and first:
            live_bytes, live_count = rec["live_bytes"], rec["live_count"]
            for stack, count, nbytes in rec["stacks"]:
                by_stack[stack] = [count, nbytes]
        if tag == 0x07:
            first = False
        if tag == 0x0A:
            infos.append((rec["size"], rec["stack"], rec["size"] + rec["slack"]))
            continue
        if cls == 0x10:
            size, stack, usable = infos[rec["info"]]
            addr = coder.alloc(rec["address_code"], usable)
            allocs.append((size, stack, rec["epoch"], addr, usable))
            change, obj = 1, (size, stack)
        elif cls in (0x20, 0x60):
            if cls == 0x60:
                size, stack, alloc_epoch, addr, usable = allocs[len(allocs) - rec["address_code"]]
            else:
                size, stack = rec["size"], rec["stack"]
                alloc_epoch = rec["epoch"] - rec["age"]
                addr = (coder.prev + rec["address_delta"]) & (1 << 64) - 1
                usable = size + rec["slack"]
            coder.free(addr, usable)
            if prev == (addr, size, stack, alloc_epoch):
                temporary += 1
                temp_by_stack[stack] = temp_by_stack.get(stack, 0) + 1
            change, obj = -1, (size, stack)
        elif tag == 0x30:
            coder.prev = (coder.prev + rec["address_delta"]) & (1 << 64) - 1
            prev = None
            continue
        else:
            continue
        size, stack = obj
        prev = (addr, size, stack, rec["epoch"]) if change > 0 else None
        entry = by_stack.setdefault(stack, [0, 0])
        entry[0] += change
        entry[1] += change * size
        lowest[stack] = min(lowest.get(stack, 0), entry[0])
        live_count += change
        live_bytes += change * size
        if change > 0 and (best is None or live_bytes > best[0]):
            best = (live_bytes, live_count, rec["epoch"],
                    {s: tuple(v) for s, v in by_stack.items() if v[1] > 0})
    best = best or (live_bytes, live_count, 0, {})
    return {"peak": best[0], "peak_count": best[1], "peak_epoch": best[2],
            "peak_by_stack": best[3], "temporary": temporary,
            "temporary_by_stack": temp_by_stack, "lowest_by_stack": lowest}
