#!/bin/sh
# Coroutines on stacks the program made itself (test/programs/coro_stacks.c): makecontext and
# swapcontext onto a stack taken from malloc or mapped above a PROT_NONE guard page, 2 to 6 KiB
# (natively enough down to 2 KiB) and 64 KiB, and a stack entered by a hand-written switch of
# the stack pointer that no libc call announces.  Under the shim each run must behave as
# natively: no byte below the coroutine's stack written (the program checks a painted floor),
# no fault on the guard page.  Every block the coroutine keeps is in the trace with the
# coroutine's function at the top of its stack; on makecontext stacks of 4 KiB and more the
# stacks are whole (the walk knows that stack's bounds) and none is cut short; where the room
# is too small for a walk, or the stack's bounds are not known, stacks are cut to the
# allocating function and counted.
# The program is bound at load (-z now), and so is libchurn.so (the Makefile): the dynamic
# linker's lazy resolver saves the vector registers on the stack it runs on, up to 2.5 KiB with
# AVX-512 state in use, which no 2 KiB stack holds, natively or traced.
. test/lib.sh

readelf -d "$SHIM" | grep -q 'FLAGS.*BIND_NOW' ||
    fail "$SHIM is not bound at load (BIND_NOW): a lazy binding inside malloc overflows a small stack"
build_c coro_stacks test/programs/coro_stacks.c -Wl,-z,now
rounds=300
for run in malloc:2048 malloc:3072 malloc:4096 malloc:6144 malloc:65536 mmap:2048 mmap:3072 \
    mmap:4096 mmap:6144 mmap:65536 raw:2048 raw:4096 raw:65536; do
    kind=${run%%:*} bytes=${run#*:}
    "$WORK/coro_stacks" "$kind" "$bytes" $rounds >"$WORK/native.$kind.$bytes" 2>&1 ||
        fail "coro_stacks $kind $bytes fails natively: $(tail -n 1 "$WORK/native.$kind.$bytes")"
    traced "$WORK/$kind.$bytes.zst" "$WORK/$kind.$bytes" "$WORK/coro_stacks" "$kind" "$bytes" $rounds
    analyze "$WORK/$kind.$bytes.zst" "$WORK/$kind.$bytes.json"
    check "$WORK/$kind.$bytes.json" "$WORK/$kind.$bytes" "$WORK/native.$kind.$bytes" "$kind" \
        "$bytes" $rounds <<'PY'
import sys
from churncheck import *
report, kind, size, rounds = load(sys.argv[1]), sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
used = lambda path: int(open(path).read().split("coroutine stack used ")[1].split()[0])
traced_used, native_used = used(sys.argv[2]), used(sys.argv[3])
kept = [g for g in field(report, "growth") if g["stack"] and g["live_bytes"] == 555 * g["live_count"]
        and g["live_count"]]
expect("blocks kept by the coroutine (allocs, live)",
       (sum(g["allocs"] for g in kept), sum(g["live_count"] for g in kept)), (rounds, rounds))
tops = sorted({g["stack"][0].split()[0] for g in kept})
if tops != ["coro_alloc"]:
    fail("the kept blocks' stacks start at %s, not coro_alloc" % tops)
expect("unknown frees", field(report, "totals", "unknown_frees"), 0)
expect("dropped events", field(report, "totals", "dropped_events"), 0)
short = field(report, "totals", "short_stacks")
if size >= 4096 and kind != "raw":
    expect("stacks cut short on a %d-byte coroutine stack" % size, short, 0)
    for g in kept:
        names = [f.split()[0] for f in g["stack"]]
        if "coro_round" not in names or "coro_body" not in names:
            fail("a kept block's stack is not whole: %s" % g["stack"])
print("%s stack of %d bytes: the coroutine takes %d natively, %d traced; %d stacks cut short"
      % (kind, size, native_used, traced_used, short))
PY
done

# What the CFI walker itself takes below the allocating function, from cold caches: a
# coroutine's first mallocs, each from a call site not seen before.  unwind.c lets it walk with
# 3 KiB left: its worst case must stay well inside.
"$WORK/coro_stacks" fresh 65536 1 >"$WORK/native.fresh" 2>&1 || fail "coro_stacks fresh fails natively"
traced "$WORK/fresh.zst" "$WORK/fresh" "$WORK/coro_stacks" fresh 65536 1
analyze "$WORK/fresh.zst" "$WORK/fresh.json"
check "$WORK/fresh.json" "$WORK/fresh" "$WORK/native.fresh" <<'PY'
import sys
from churncheck import *
report = load(sys.argv[1])
used = lambda path: int(open(path).read().split("coroutine stack used ")[1].split()[0])
extra = used(sys.argv[2]) - used(sys.argv[3])
sites = growth_with(report, "fresh_site")
expect("fresh sites' blocks", sum(g["live_count"] for g in sites), 4)
if any("fresh_body" not in " ".join(g["stack"]) for g in sites):
    fail("a fresh site's stack is not whole: %s" % [g["stack"] for g in sites])
if extra > 2048:
    fail("the CFI walker took %d bytes of a coroutine's stack from cold caches" % extra)
print("the CFI walker from cold caches: +%d bytes of a coroutine's stack" % extra)
PY
