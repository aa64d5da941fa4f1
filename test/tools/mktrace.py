#!/usr/bin/env python3
"""Writes synthetic libchurn traces, independently of the shim, for the analyzer's tests.

Usage: mktrace.py DESCRIPTION.json OUT     (DESCRIPTION may be '-' for stdin)
or, from Python: import mktrace; data = mktrace.build(description)

The description is a JSON object:

  "header":   file header fields, all optional: version, flags (1 = events), ring_bytes
              (default: size of the file), pid, start_realtime_ns, page_size, magic,
              header_crc (default: the right one)
  "segments": list of segments, each
                {"seq", "first_epoch", "last_epoch", "records": [...],
                 optional overrides: "version", "raw_bytes", "payload_crc", "header_crc",
                 "magic", "payload_hex" (the zstd frame bytes, replacing the compressed
                 records), "delta": true (version 8: a delta segment, its magic with
                 SEGMENT_DELTA set)}
  "layout":   optional physical order of what follows the file header, a list of
                N                    segment N (index into "segments")
                {"partial": N, "bytes": K}   the first K bytes of segment N
                {"garbage": K}       K bytes of 0xA5
              default: every segment in list order.
  "damage":   optional list applied to the finished file, in order:
                {"truncate": K}      keep the first K bytes (negative: drop -K from the end)
                {"flip": OFFSET}     xor 0xFF into one byte (negative: from the end)

Records are lists, the record name first; addresses are absolute (the writer codes them as
include/churn/coding.h does, and writes the ALLOC_INFO records allocations need), stacks list
absolute instruction pointers innermost first:

  ["segment_start", seq, epoch, ns]
  ["module", id, bias, start, end, build_id_hex, path]   (unloaded 0; ["module_unloaded",
                               id, bias, start, end, unloaded, build_id_hex, path] to set it)
  ["stack", id, [ip, ...]]      generation: the modules defined so far in the segment
  ["stack_ref", id, depth, generation, ref, shared, [ip, ...]]   all fields as given
  ["thread", tid]              ["epoch", epoch]
  ["allocator", name, page_size, [counter names]]
  ["size_classes", [[object size, span bytes], ...]]
  ["stack_sample", n]          (version 3)
  ["short_stacks", n]          running total of stacks cut short
  ["unordered", n]             (version 4)
  ["carry", live_count, live_bytes, [[stack, count, bytes], ...]]
  ["dropped", count, reason]   ["exit", how, detail]
  ["alloc", kind, addr, size, slack, stack]
  ["free", kind, addr, size, slack, stack, age]        FREE_SHORT when the segment allocated it
  ["free_full", kind, addr, size, slack, stack, age]   always the self-describing FREE
  ["free_unknown", addr]
  ["map", kind, addr, length, a, b, stack, internal]   kind 5: an arena (version 6)
  ["code", start, size, name]  a runtime's name for generated code (version 6)
  ["py_code", code id, name]   "qualname:file", the names of a Python code object's frames
                               (version 7)
  ["epoch_end", {"epoch", "start_ns", "wall_ns", "cpu_ns", "rss", "allocs", "frees",
                 "alloc_bytes", "free_bytes", "late", "live_count", "live_bytes",
                 "classes": [[cls, allocs, frees, alloc_bytes, free_bytes]],
                 "callsites": [[stack, allocs, frees, alloc_bytes, free_bytes,
                                live_count, live_bytes]],
                 "counters": [values]}]   (missing fields are 0 / empty)
  ["raw", hex]                 bytes as given (to write malformed records)

zstd compression shells out to the zstd command-line tool (Debian package zstd).
"""
import json
import struct
import subprocess
import sys
import zlib

SKIPPABLE_MAGIC = 0x184D2A5C
SEGMENT_MAGIC = 0x47534843
SEGMENT_DELTA = 0x20000000  # version 8: the bit of a delta segment's magic
FILE_HEADER = struct.Struct("<II8sIIQQQII")     # 56 bytes, as churn_file_header
SEGMENT_HEADER = struct.Struct("<IIIIQQQIIII")  # 56 bytes, as churn_segment_header

TAGS = {
    "segment_start": 0x01, "module": 0x02, "stack": 0x03, "stack_ref": 0x03, "module_unloaded": 0x02, "thread": 0x04, "epoch": 0x05,
    "allocator": 0x06, "carry": 0x07, "dropped": 0x08, "exit": 0x09, "size_classes": 0x0b,
    "stack_sample": 0x0c, "short_stacks": 0x0d, "unordered": 0x0f,
    "alloc": 0x10,
    "free": 0x20, "free_unknown": 0x30, "map": 0x40, "epoch_end": 0x50, "code": 0x80,
    "py_code": 0x81,
}


def varint(v):
    if v < 0 or v >= 1 << 64:
        raise ValueError("varint out of range: %r" % v)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(v):
    v = ((v + (1 << 63)) % (1 << 64)) - (1 << 63)  # wrap into int64 like the C side
    return ((v << 1) ^ (v >> 63)) & ((1 << 64) - 1)


def string(b):
    if isinstance(b, str):
        b = b.encode()
    return varint(len(b)) + b


LIFO_BUCKETS, LIFO_DEPTH, FREED, ADJACENT = 1024, 4, 1024, 4
ALLOC_EXPLICIT = LIFO_DEPTH + FREED + 2 * ADJACENT
MASK64 = (1 << 64) - 1


class Coder:
    """The address predictor of include/churn/coding.h, rewritten here so the analyzer's
    decoder is checked against an encoder that does not share its code."""

    def __init__(self):
        self.prev_addr = self.prev_map_addr = self.prev_alloc_end = self.prev_fresh_end = 0
        self.allocs = 0
        self.freed = [0] * FREED
        self.freed_pos = 0
        self.lifo = {}

    @staticmethod
    def bucket(usable):
        return (((usable & 0xFFFFFFFF) * 2654435761) & 0xFFFFFFFF) >> 22 & (LIFO_BUCKETS - 1)

    def freed_addr(self, addr, usable):
        l = self.lifo.setdefault(self.bucket(usable), [0] * LIFO_DEPTH)
        l.insert(0, addr)
        del l[LIFO_DEPTH:]
        self.freed[self.freed_pos % FREED] = addr
        self.freed_pos += 1
        self.prev_addr = addr

    def allocated(self, addr, usable, code):
        self.prev_alloc_end = (addr + usable) & MASK64
        if code >= LIFO_DEPTH + FREED:
            self.prev_fresh_end = self.prev_alloc_end
        self.prev_addr = addr
        self.allocs += 1
        return self.allocs - 1

    def alloc_code(self, addr, usable):
        l = self.lifo.setdefault(self.bucket(usable), [0] * LIFO_DEPTH)
        if addr in l:
            k = l.index(addr)
            del l[k]
            l.append(0)
            return k
        for j in range(FREED):
            if self.freed[(self.freed_pos - 1 - j) % FREED] == addr:
                return LIFO_DEPTH + j
        for n, end in enumerate((self.prev_alloc_end, self.prev_fresh_end)):
            gap = addr - end
            if end and 0 <= gap < 8 * ADJACENT and gap % 8 == 0:
                return LIFO_DEPTH + FREED + n * ADJACENT + gap // 8
        return (ALLOC_EXPLICIT + zigzag(addr - self.prev_addr)) % (1 << 64)  # as C wraps


class Encoder:
    """Encodes one segment's record stream, with the segment's coding state: allocation
    infos, the address coder and the segment's live map (address -> number, info, epoch).
    A "free" of an object this segment allocated, with matching fields, becomes FREE_SHORT;
    "free_full" always writes the self-describing FREE."""

    def __init__(self, version=3):
        self.out = bytearray()
        self.version = version
        self.reset()

    def reset(self):
        self.modules = 0
        self.coder = Coder()
        self.infos = {}
        self.info_stack = 0
        self.live = {}
        self.epoch = 0

    def info_index(self, size, slack, stack):
        key = (size, slack, stack)
        if key not in self.infos:
            self.infos[key] = len(self.infos)
            # version 7: the stack id less the previous info's
            coded = zigzag(stack - self.info_stack) if self.version >= 7 else stack
            self.out += bytes([0x0A]) + varint(size) + varint(slack) + varint(coded)
            self.info_stack = stack
        return self.infos[key]

    def alloc(self, kind, a, size, slack, stack):
        index = self.info_index(size, slack, stack)
        code = self.coder.alloc_code(a, size + slack)
        number = self.coder.allocated(a, size + slack, code)
        self.live[a] = (number, (size, slack, stack), self.epoch)
        return bytes([0x10 | kind]) + varint(index) + varint(code)

    def free(self, kind, a, size, slack, stack, age, short_ok):
        entry = self.live.pop(a, None)
        if short_ok and entry and entry[1] == (size, slack, stack) and self.epoch - entry[2] == age:
            rec = bytes([0x60 | kind]) + varint(self.coder.allocs - entry[0])
        else:
            rec = bytes([0x20 | kind]) + varint(zigzag(a - self.coder.prev_addr)) + \
                varint(size) + varint(slack) + varint(stack) + varint(age)
        self.coder.freed_addr(a, size + slack)
        return rec

    def record(self, rec):
        name, args = rec[0], rec[1:]
        if name == "raw":
            self.out += bytes.fromhex(args[0])
            return
        if name == "alloc":
            self.out += self.alloc(*args)
            return
        if name in ("free", "free_full"):
            self.out += self.free(*args, short_ok=(name == "free"))
            return
        tag = TAGS[name]
        body = bytearray()
        if name == "segment_start":
            self.reset()
        if name == "epoch":
            self.epoch = args[0]
        if name in ("segment_start", "thread", "epoch", "dropped", "exit"):
            for a in args:
                body += varint(a)
        elif name in ("module", "module_unloaded"):
            if name == "module":
                mid, bias, start, end, build_id, path = args
                unloaded = 0
            else:
                mid, bias, start, end, unloaded, build_id, path = args
            self.modules = min(max(self.modules, mid + 1), (1 << 64) - 1)
            body += varint(mid) + varint(bias) + varint(start) + varint(end)
            body += varint(unloaded) if self.version >= 2 else b""
            body += string(bytes.fromhex(build_id)) + string(path)
        elif name == "stack":
            # written whole (ref 0), as version 1 did without the field
            sid, ips = args
            body += varint(sid) + varint(len(ips))
            body += varint(self.modules) + varint(0) if self.version >= 2 else b""
            prev = 0
            for ip in ips:
                body += varint(zigzag(ip - prev))
                prev = ip
        elif name == "allocator":
            aname, page, counters = args
            body += string(aname) + varint(page) + varint(len(counters))
            for c in counters:
                body += string(c)
        elif name == "stack_ref":
            sid, depth, generation, ref, shared, ips = args
            body += varint(sid) + varint(depth) + varint(generation) + varint(ref)
            body += varint(shared) if ref else b""
            prev = 0
            for ip in ips:
                body += varint(zigzag(ip - prev))
                prev = ip
        elif name in ("stack_sample", "short_stacks", "unordered"):
            body += varint(args[0])
        elif name == "size_classes":
            (pairs,) = args
            body += varint(len(pairs))
            for size, span in pairs:
                body += varint(size) + varint(span)
        elif name == "carry":
            count, nbytes, entries = args
            body += varint(count) + varint(nbytes) + varint(len(entries))
            prev = 0
            for stack, live, live_bytes in entries:
                # version 7: each id less the previous one, modulo 2^64
                body += varint((stack - prev) % (1 << 64) if self.version >= 7 else stack)
                body += varint(live) + varint(live_bytes)
                prev = stack
        elif name == "free_unknown":
            body += varint(zigzag(args[0] - self.coder.prev_addr))
            self.coder.prev_addr = args[0]
        elif name == "map":
            kind, a, length, x, y, stack, internal = args
            tag |= kind | (0x08 if internal else 0)
            body += varint(zigzag(a - self.coder.prev_map_addr)) + varint(length) + \
                varint(x) + varint(y) + varint(stack)
            self.coder.prev_map_addr = a
        elif name == "code":
            start, size, text = args
            body += varint(start) + varint(size) + string(text)
        elif name == "py_code":
            code_id, text = args
            body += varint(code_id) + string(text)
        elif name == "epoch_end":
            body += epoch_end(args[0], self.version)
        self.out.append(tag)
        self.out += body


def epoch_end(d, version):
    body = bytearray()
    for k in ("epoch", "start_ns", "wall_ns", "cpu_ns", "rss", "allocs", "frees",
              "alloc_bytes", "free_bytes", "late", "live_count", "live_bytes"):
        body += varint(d.get(k, 0))
    prev = 0
    for key in ("classes", "callsites"):
        rows = d.get(key, [])
        body += varint(len(rows))
        for row in rows:
            first = row[0]
            if key == "callsites" and version >= 7:
                first = zigzag(row[0] - prev)  # each stack id less the previous one
                prev = row[0]
            for v in [first] + list(row[1:]):
                body += varint(v)
    counters = d.get("counters", [])
    body += varint(len(counters))
    for v in counters:
        body += varint(v)
    return bytes(body)


def zstd_compress(raw):
    return subprocess.run(["zstd", "-q", "-c", "-3"], input=raw, stdout=subprocess.PIPE,
                          check=True).stdout


def crc32(b):
    return zlib.crc32(b) & 0xFFFFFFFF


def segment_bytes(seg):
    enc = Encoder(seg.get("version", 3))
    for rec in seg.get("records", []):
        enc.record(rec)
    raw = bytes(enc.out)
    payload = bytes.fromhex(seg["payload_hex"]) if "payload_hex" in seg else zstd_compress(raw)
    magic = SEGMENT_MAGIC | (SEGMENT_DELTA if seg.get("delta") else 0)
    fields = [SKIPPABLE_MAGIC, SEGMENT_HEADER.size - 8, seg.get("magic", magic),
              seg.get("version", 3), seg["seq"], seg.get("first_epoch", 0),
              seg.get("last_epoch", 0), seg.get("raw_bytes", len(raw)), len(payload),
              seg.get("payload_crc", crc32(payload)), 0]
    fields[-1] = seg.get("header_crc", crc32(SEGMENT_HEADER.pack(*fields)))
    return SEGMENT_HEADER.pack(*fields) + payload


def file_header(h, body_len):
    magic = h.get("magic", "CHURNTRC").encode()
    fields = [SKIPPABLE_MAGIC, FILE_HEADER.size - 8, magic, h.get("version", 3),
              h.get("flags", 1), h.get("ring_bytes", FILE_HEADER.size + body_len),
              h.get("pid", 4242), h.get("start_realtime_ns", 0), h.get("page_size", 4096), 0]
    fields[-1] = h.get("header_crc", crc32(FILE_HEADER.pack(*fields)))
    return FILE_HEADER.pack(*fields)


def prelude(seq, epoch, carry=(0, 0, []), modules=(), allocator=("glibc", 4096, [])):
    """The records every shim segment opens with: SEGMENT_START, ALLOCATOR, MODULEs, CARRY."""
    recs = [["segment_start", seq, epoch, 0], ["allocator"] + list(allocator)]
    recs += [["module"] + list(m) for m in modules]
    recs.append(["carry", carry[0], carry[1], [list(e) for e in carry[2]]])
    return recs


def build(desc):
    segs = [segment_bytes(s) for s in desc.get("segments", [])]
    layout = desc.get("layout", list(range(len(segs))))
    body = bytearray()
    for item in layout:
        if isinstance(item, int):
            body += segs[item]
        elif "partial" in item:
            body += segs[item["partial"]][:item["bytes"]]
        else:
            body += b"\xA5" * item["garbage"]
    data = bytearray(file_header(desc.get("header", {}), len(body)) + body)
    for d in desc.get("damage", []):
        if "truncate" in d:
            data = data[:d["truncate"]]
        else:
            data[d["flip"]] ^= 0xFF
    return bytes(data)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: mktrace.py DESCRIPTION.json OUT\n")
        return 2
    src = sys.stdin if argv[1] == "-" else open(argv[1])
    data = build(json.load(src))
    with open(argv[2], "wb") as f:
        f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
