#!/bin/sh
# The blind-spot detector (shim/record/blind.c): test/programs/pool_alloc.c grows its RSS by 40 MiB
# over four seconds through a pool allocator on one mmap that libchurn cannot know.  stderr
# must say, once, that the growth is not traced, with the mapping that grew and the executable
# as the likely culprit (named as stripped for the stripped copy, and no known allocator named
# in it); the report must carry a
# warning at the top that says "not traced" and fragmentation[].untraced_bytes within the
# growth.  The same growth through malloc (traced) must raise nothing: in 1 MiB blocks, in
# one buffer allocated at start and filled later, and in 512-byte objects, also sampled
# (CHURN_SAMPLE_BYTES), when the pool's growth is still said.  Pages a program writes in a
# file it mapped privately are named by the file, no allocator blamed.  A copy that carries a
# function under a name of V8's collector must have the growth named as V8's own heap (outside
# malloc by design), on stderr and at the top of the report, still with "not traced" and
# untraced_bytes; stripped, by the message of V8's heap among its bytes.
. test/lib.sh

build_c pool_alloc test/programs/pool_alloc.c
strip -o "$WORK/pool_alloc_stripped" "$WORK/pool_alloc"
build_c pool_v8 test/programs/pool_alloc.c -DENGINE_V8
strip -o "$WORK/pool_v8_stripped" "$WORK/pool_v8"

traced "$WORK/pool_v8_stripped.zst" "$WORK/pool_v8_stripped.out" "$WORK/pool_v8_stripped"
grep -q "in mappings of V8's own heap (outside malloc by design.*not traced: objects on the JS heap" "$WORK/pool_v8_stripped.out.err" ||
    fail "pool_v8_stripped: the growth is not named V8's heap: $(head -n 1 "$WORK/pool_v8_stripped.out.err")"
grep -q "likely culprit: $WORK/pool_v8_stripped, which calls mmap and carries V8 (its garbage collector's messages are in its bytes: it is stripped)" "$WORK/pool_v8_stripped.out.err" ||
    fail "pool_v8_stripped: the culprit line does not name V8 by its message: $(sed -n 2p "$WORK/pool_v8_stripped.out.err")"

traced "$WORK/pool_v8.zst" "$WORK/pool_v8.out" "$WORK/pool_v8"
err="$WORK/pool_v8.out.err"
[ "$(grep -c "in mappings of V8's own heap (outside malloc by design: the 'outside' part of the RSS split; traced heap +[0-9.]* MiB); not traced: objects on the JS heap; the largest growth: [0-9a-f]*-[0-9a-f]* +" "$err")" -eq 1 ] ||
    fail "pool_v8: not one line naming V8's own heap on stderr: $(head -n 2 "$err")"
grep -q 'that nothing traced explains' "$err" && fail "pool_v8: blamed on an unknown allocator: $(head -n 1 "$err")"
grep -q "likely culprit: $WORK/pool_v8, which calls mmap and carries V8" "$err" ||
    fail "pool_v8: the culprit line does not name V8: $(sed -n 2p "$err")"
"$ANALYZE" "$WORK/pool_v8.zst" >"$WORK/pool_v8.txt" 2>&1 || fail "churn-analyze pool_v8.zst failed"
sed -n 3p "$WORK/pool_v8.txt" | grep -q "WARNING: about .* MiB of RSS growth (the shim's estimate) is in mappings of V8's own heap, in pool_v8 (outside malloc by design: the 'outside' part of the RSS split); not traced: objects on the JS heap" ||
    fail "pool_v8: the warning at the top does not name V8's heap: $(sed -n 3p "$WORK/pool_v8.txt")"
grep -q "allocator libchurn does not know" "$WORK/pool_v8.txt" &&
    fail "pool_v8: the report blames an unknown allocator"

for prog in pool_alloc pool_alloc_stripped; do
    traced "$WORK/$prog.zst" "$WORK/$prog.out" "$WORK/$prog"
    err="$WORK/$prog.out.err"
    [ "$(grep -c 'that nothing traced explains' "$err")" -eq 1 ] ||
        fail "$prog: not one blind-spot line on stderr: $(head -n 2 "$err")"
    grep -q 'it is not traced; the largest growth: [0-9a-f]*-[0-9a-f]* +[0-9.]* MiB' "$err" ||
        fail "$prog: the blind-spot line names no mapping: $(head -n 1 "$err")"
    if [ "$prog" = pool_alloc ]; then
        want="likely culprit: $WORK/pool_alloc, which calls mmap and has [1-9][0-9]* allocator-like"
    else
        want="likely culprit: the executable $WORK/pool_alloc_stripped, which calls mmap and is stripped"
    fi
    grep -q "$want" "$err" || fail "$prog: no line '$want': $(sed -n 2p "$err")"
    # An allocator of its own carries no known allocator's warnings: none may be named.
    grep -q 'carr[a-z]* mimalloc\|carr[a-z]* jemalloc' "$err" &&
        fail "$prog: a known allocator named in a hand-written one: $(grep culprit "$err")"
    "$ANALYZE" "$WORK/$prog.zst" >"$WORK/$prog.txt" 2>&1 || fail "churn-analyze $prog.zst failed"
    sed -n 3p "$WORK/$prog.txt" | grep -q "WARNING: about .* MiB of RSS growth is not traced.*likely in $prog" ||
        fail "$prog: no 'not traced' warning at the top of the report: $(sed -n 3p "$WORK/$prog.txt")"
done

for prog in pool_alloc pool_alloc_stripped pool_v8; do
    analyze "$WORK/$prog.zst" "$WORK/$prog.json"
    check "$WORK/$prog.json" "$WORK/$prog.out" "$prog" <<'PY'
import sys
from churncheck import *
report, prog = load(sys.argv[1]), sys.argv[3]
allocated = int(open(sys.argv[2]).read().split()[2])
if not any("not traced" in w for w in field(report, "warnings")):
    fail("%s: no 'not traced' warning in %r" % (prog, field(report, "warnings")))
last = field(report, "fragmentation")[-1]
untraced = field(last, "untraced_bytes")
if not (16 << 20) <= untraced <= allocated + (1 << 20):
    fail("%s: untraced_bytes %d, expected 16 MiB up to the %d B the pool allocated"
         % (prog, untraced, allocated))
if untraced > last["outside_heap_bytes"]:
    fail("%s: untraced_bytes %d above outside_heap_bytes %d" % (prog, untraced, last["outside_heap_bytes"]))
print("%s: %d of %d B not traced, warned" % (prog, untraced, allocated))
PY
done

# A file mapped privately and written a step at a time: its copy-on-write pages are anonymous
# memory that no allocator holds, named by the file, with no allocator blamed.
truncate -s 40M "$WORK/cow.data"
traced "$WORK/cow.zst" "$WORK/cow.out" "$WORK/pool_alloc" cow "$WORK/cow.data"
[ "$(grep -c 'that nothing traced explains' "$WORK/cow.out.err")" -eq 1 ] ||
    fail "cow: the growth is not said once: $(head -n 2 "$WORK/cow.out.err")"
grep -qF "the mapping that grew most is one of $WORK/cow.data, mapped privately and written: its copy-on-write pages are the file's data changed in memory, not an allocator's" "$WORK/cow.out.err" ||
    fail "cow: the file is not named: $(sed -n 2p "$WORK/cow.out.err")"
grep -q "culprit" "$WORK/cow.out.err" && fail "cow: an allocator was blamed: $(grep culprit "$WORK/cow.out.err")"
"$ANALYZE" "$WORK/cow.zst" >"$WORK/cow.txt" 2>&1 || fail "churn-analyze cow.zst failed"
sed -n 3p "$WORK/cow.txt" | grep -q "WARNING: about .* MiB of RSS growth is not traced (the shim's estimate): most of it is copy-on-write pages of a file the program mapped privately and wrote" ||
    fail "cow: the report's first warning does not say the file's pages: $(sed -n 3p "$WORK/cow.txt")"

# quiet NAME MODE: the same growth through malloc (traced) raises nothing, on stderr or in the
# report; "late" mallocs it all before the detector's baseline and fills it afterwards.
quiet() {
    traced "$WORK/$1.zst" "$WORK/$1.out" "$WORK/pool_alloc" "$2"
    if grep -q 'not traced' "$WORK/$1.out.err"; then
        fail "$1: growth through malloc (traced) raised the blind-spot warning: $(head -n 1 "$WORK/$1.out.err")"
    fi
    analyze "$WORK/$1.zst" "$WORK/$1.json"
    check "$WORK/$1.json" "$1" <<'PY'
import sys
from churncheck import *
report, name = load(sys.argv[1]), sys.argv[2]
if any("not traced" in w for w in field(report, "warnings")):
    fail("%s: a 'not traced' warning: %r" % (name, field(report, "warnings")))
# a sampled trace has no RSS split (its fragmentation is not known): the warnings say it
rows = field(report, "fragmentation")
last = rows[-1] if rows else {}
if last.get("untraced_bytes", 0) > (4 << 20):
    fail("%s: untraced_bytes %d" % (name, last["untraced_bytes"]))
print("%s: 40 MiB of malloc growth, quiet, untraced_bytes %d" % (name, last.get("untraced_bytes", 0)))
PY
}
quiet malloc malloc
quiet late late
quiet small small
# Sampled, the detector weighs the sampled objects as the analyzer does: 2048 small objects a
# step, of which about one in a thousand is recorded, still explain the growth; the pool's
# growth is still said.
CHURN_SAMPLE_BYTES=524288 quiet small_sampled small
CHURN_SAMPLE_BYTES=524288 traced "$WORK/pool_sampled.zst" "$WORK/pool_sampled.out" "$WORK/pool_alloc"
[ "$(grep -c 'that nothing traced explains' "$WORK/pool_sampled.out.err")" -eq 1 ] ||
    fail "pool_sampled: the pool's growth under sampling is not said once: $(head -n 2 "$WORK/pool_sampled.out.err")"

rm -f "$WORK"/forked*.zst
CHURN_EPOCH_MS=200 traced "$WORK/forked.zst" "$WORK/forked.out" "$WORK/pool_alloc" fork
child=$(ls "$WORK"/forked*.zst | grep -v "/forked.zst$" | head -n 1)
[ -n "$child" ] || fail "the fork child wrote no trace of its own: $(ls "$WORK")"
for trace in "$WORK/forked.zst" "$child"; do
    analyze "$trace" "$trace.json"
done
check "$WORK/forked.zst.json" "$child.json" <<'PY'
import sys
from churncheck import *
parent, child = load(sys.argv[1]), load(sys.argv[2])
if not any("not traced" in w for w in field(parent, "warnings")):
    fail("fork: the parent's report has no 'not traced' warning")
if any("not traced" in w for w in field(child, "warnings")):
    fail("fork: the child's report inherited the warning: %r" % field(child, "warnings"))
rows = field(child, "fragmentation")
if any((r.get("untraced_bytes") or 0) > (4 << 20) for r in rows):
    fail("fork: the child reports untraced bytes %r" % [r.get("untraced_bytes") for r in rows])
print("fork: the parent warned, its child (%d rows) did not" % len(rows))
PY
