#!/bin/sh
# Random damage must never crash, hang or trip the sanitizers: garbage record streams inside
# segments whose checksums are right, random records with extreme values, and flipped or cut
# files.  The analyzer is rebuilt with AddressSanitizer and UBSan for this, with the decoder
# under test (CHURN_TEST_DECODER, test/lib.sh).
# decoders: fast and slow
LIB_ANALYZER_ONLY=1
. test/lib.sh
T=$WORK
mkdir -p "$T/cases"
LIBS=$(make_var ANALYZER_LIBS)
gcc -O1 -g -std=gnu11 -D_GNU_SOURCE -Iinclude -Ianalyzer -I/usr/include/elfutils $(decoder_cflags) \
    -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
    -o "$T/churn-analyze" $(make_var ANALYZER_SRC) $LIBS 2>"$T/build.log" ||
    fail "sanitizer build failed: $(head -1 "$T/build.log")"

python3 - "$T" <<'PY'
import os, random, subprocess, sys
sys.path.insert(0, "test/tools")
import mktrace
T = sys.argv[1]
rng = random.Random(1234)
BIG = [0, 1, 2, 127, 128, (1 << 32) - 1, 1 << 32, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]

def val():
    return rng.choice(BIG) if rng.random() < 0.3 else rng.randrange(0, 1 << rng.choice((4, 8, 16, 40)))

def py_frame():
    # a Python frame's address (include/churn/format.h), its code id often one named
    return 0xfe00000000000000 | rng.randrange(0, 4) << 24 | rng.randrange(0, 1 << 24)

def random_record():
    name = rng.choice(list(mktrace.TAGS))
    if name in ("segment_start", "dropped", "exit"):
        return [name] + [val() for _ in range(3 if name == "segment_start" else 2)]
    if name in ("thread", "epoch"):
        return [name, val()]
    if name == "module":
        return [name, val(), val(), val(), val(), "ab" * rng.randrange(0, 4), "/x/lib%d.so" % val()]
    if name == "stack":
        return [name, rng.randrange(0, 5), [rng.choice((val, py_frame))()
                                            for _ in range(rng.randrange(0, 5))]]
    if name == "allocator":
        return [name, "a", val(), ["c%d" % i for i in range(rng.randrange(0, 3))]]
    if name == "stack_ref":
        return [name, rng.randrange(0, 5), rng.randrange(0, 300), val(), rng.randrange(0, 5),
                rng.randrange(0, 300), [val() for _ in range(rng.randrange(0, 5))]]
    if name == "module_unloaded":
        return [name, val(), val(), val(), val(), val(), "ab", "/x/lib%d.so" % val()]
    if name in ("stack_sample", "short_stacks", "unordered"):
        return [name, val()]
    if name == "size_classes":
        return [name, [[val(), val()] for _ in range(rng.randrange(0, 4))]]
    if name == "carry":
        return [name, val(), val(), [[rng.randrange(0, 5), val(), val()] for _ in range(rng.randrange(0, 3))]]
    if name == "alloc":
        return [name, rng.randrange(0, 6), rng.choice((0, 0x1000, 0x2000, val())), val(), val(), rng.randrange(0, 5)]
    if name == "free":
        return [name, rng.randrange(0, 4), rng.choice((0, 0x1000, 0x2000, val())), val(), val(), rng.randrange(0, 5), val()]
    if name == "free_unknown":
        return [name, val()]
    if name == "map":
        return [name, rng.randrange(0, 6), val(), val(), val(), val(), val(), rng.random() < 0.5]
    if name == "code":
        return [name, val(), val(), rng.choice(("JS:*f /x.js:%d:1" % val(), "py::g:/x.py",
                                                "Builtin:B", ""))]
    if name == "py_code":
        return [name, rng.choice((val(), rng.randrange(0, 4))),
                rng.choice(("g:/x.py", "a:b:c", "", "q" * rng.randrange(0, 5000)))]
    d = {k: val() for k in ("epoch", "wall_ns", "rss", "allocs", "live_count", "live_bytes")}
    d["epoch"] = rng.randrange(0, 8) if rng.random() < 0.8 else d["epoch"]
    d["classes"] = [[rng.randrange(0, 300), val(), val(), val(), val()] for _ in range(rng.randrange(0, 3))]
    d["callsites"] = [[rng.randrange(0, 5), val(), val(), val(), val(), val(), val()] for _ in range(rng.randrange(0, 3))]
    d["counters"] = [val() for _ in range(rng.randrange(0, 3))]
    return [name, d]

def segment(seq, body, version=3):
    return {"seq": seq, "first_epoch": seq, "last_epoch": seq, "version": version,
            "records": mktrace.prelude(seq, seq) + body}

n = 0
def write(desc):
    global n
    open(os.path.join(T, "cases", "%03d" % n), "wb").write(mktrace.build(desc))
    n += 1

for i in range(40):       # garbage record streams
    garbage = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))).hex()
    write({"header": {"flags": rng.choice((0, 1))},
           "segments": [segment(0, [["raw", garbage]]), segment(1, [["epoch", 1]])]})
for i in range(60):       # random well-formed records with extreme values
    write({"header": {"flags": rng.choice((0, 1))},
           "segments": [segment(s, [random_record() for _ in range(rng.randrange(1, 40))])
                        for s in range(rng.randrange(1, 4))]})
for i in range(30):       # the same in version 6 (arena MAP and CODE records)
    write({"header": {"flags": rng.choice((0, 1)), "version": 6},
           "segments": [segment(s, [random_record() for _ in range(rng.randrange(1, 40))], 6)
                        for s in range(rng.randrange(1, 4))]})
for i in range(30):       # the same in version 7 (CODE records of Python code objects)
    write({"header": {"flags": rng.choice((0, 1)), "version": 7},
           "segments": [segment(s, [random_record() for _ in range(rng.randrange(1, 40))], 7)
                        for s in range(rng.randrange(1, 4))]})
for i in range(30):       # the same in version 8, key and delta segments at random
    write({"header": {"flags": rng.choice((0, 1)), "version": 8},
           "segments": [dict(segment(s, [random_record() for _ in range(rng.randrange(1, 40))], 8),
                             delta=rng.random() < 0.6)
                        for s in range(rng.randrange(1, 5))]})
base = {"segments": [segment(s, [["stack", 1, [0x10]], ["epoch", s], ["alloc", 0, 0x1000 + s, 8, 0, 1]])
                     for s in range(3)]}
# version 8: a key segment defines stack 1, the two delta segments after it use it
delta = {"header": {"version": 8},
         "segments": [dict(segment(s, ([["stack", 1, [0x10]]] if s == 0 else []) +
                                      [["epoch", s], ["alloc", 0, 0x1000 + s, 8, 0, 1]], 8),
                           delta=s > 0) for s in range(3)]}
delta_size = len(mktrace.build(delta))
for i in range(30):       # flipped bytes and cut files of it
    damage = [{"flip": rng.randrange(delta_size)} for _ in range(rng.randrange(1, 4))]
    if rng.random() < 0.3:
        damage.append({"truncate": rng.randrange(1, delta_size)})
    write(dict(delta, damage=damage))
size = len(mktrace.build(base))
for i in range(60):       # flipped bytes and cut files
    damage = [{"flip": rng.randrange(size)} for _ in range(rng.randrange(1, 4))]
    if rng.random() < 0.3:
        damage.append({"truncate": rng.randrange(1, size)})
    write(dict(base, damage=damage))

# Leaks at exit are not this test's subject (the process ends right after the report).
env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
for name in sorted(os.listdir(os.path.join(T, "cases"))):
    path = os.path.join(T, "cases", name)
    for args in (["--json"], []):
        try:
            p = subprocess.run([os.path.join(T, "churn-analyze")] + args + [path],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60, env=env)
        except subprocess.TimeoutExpired:
            print("t_analyzer_fuzz: case %s hangs" % path)
            sys.exit(1)
        err = p.stderr.decode(errors="replace")
        if p.returncode not in (0, 1) or (p.returncode == 1 and err.count("\n") != 1):
            print("t_analyzer_fuzz: case %s: exit %d: %s" % (path, p.returncode, err.strip().splitlines()[:3]))
            sys.exit(1)
        if p.returncode == 0 and err:
            print("t_analyzer_fuzz: case %s: stderr on success: %s" % (path, err.strip()[:200]))
            sys.exit(1)
PY
