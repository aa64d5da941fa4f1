#!/bin/sh
# A real program traced by libchurn and by heaptrack must show the same number of allocation
# calls: bench/python_churn.py under PYTHONMALLOC=malloc (every Python object through the C
# allocator), about 580,000 calls, once under each tracer.  The count libchurn's analyzer
# reports (totals.allocs of `churn-analyze --json`) must be within 0.5 % of heaptrack's
# "calls to allocation functions".
#
# What heaptrack 1.4 (Debian 12) counts as an "allocation function" call, measured with a
# C probe making 1000 calls of each kind:
#   counted once each:  malloc (also malloc(0)), calloc, posix_memalign, aligned_alloc, valloc,
#                       and every realloc that returns non-NULL: realloc(NULL, n), growing,
#                       shrinking in place or moving (heaptrack records it as a free of the old
#                       block plus an allocation of the new one)
#   not counted:        memalign and pvalloc (not intercepted), realloc(p, 0) (glibc frees p
#                       and returns NULL, and heaptrack records neither), free
#   its own:            one 72,704-byte malloc of libstdc++'s emergency exception pool,
#                       because heaptrack's preload library pulls libstdc++ into the process
# libchurn records an allocation event for every malloc, calloc, realloc, the aligned family
# and operator new; its realloc is likewise one allocation plus one free of the old block.
# So the two counts are the same set of calls as long as the program never calls memalign or
# pvalloc; CPython 3.11 with PYTHONMALLOC=malloc calls neither (checked with a counting
# preload: 0 calls), and it does not use operator new.  What remains is heaptrack's one pool
# allocation and a few environment-dependent start-up allocations (each tracer adds its own
# variables to os.environ), far below the 0.5 % tolerance (~2,900 calls).
. test/lib.sh

PY=/usr/bin/python3   # Debian's python 3.11, not a version manager's shim
ROUNDS=5000
for tool in heaptrack heaptrack_print "$PY"; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is not installed (make check installs it)"
done
dir=$WORK

PYTHONMALLOC=malloc PYTHONHASHSEED=0 heaptrack -o "$dir/ht-data" \
    "$PY" bench/python_churn.py "$ROUNDS" >"$dir/heaptrack.out" 2>&1 \
    || fail "python under heaptrack failed: $(tail -n 3 "$dir/heaptrack.out")"
htfile=$(ls "$dir"/ht-data.*) || fail "heaptrack wrote no data file in $dir"
heaptrack_print -f "$htfile" >"$dir/heaptrack_print.txt" 2>&1 \
    || fail "heaptrack_print failed on $htfile"
ht=$(sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p' "$dir/heaptrack_print.txt")
[ -n "$ht" ] || fail "no 'calls to allocation functions' line in heaptrack_print output"

PYTHONMALLOC=malloc PYTHONHASHSEED=0 traced "$dir/trace.zst" "$dir/churn.out" \
    "$PY" bench/python_churn.py "$ROUNDS"
# python (non-PIE, it takes malloc's address) has a PLT stub named malloc: the shim must not
# mistake it for an allocator of its own and must stay silent.
if grep -q "libchurn:" "$dir/churn.out" "$dir/churn.out.err"; then
    fail "libchurn printed on an ordinary program: $(grep -h -m1 libchurn: "$dir/churn.out" "$dir/churn.out.err")"
fi
# Both runs must have done the same work before their counts can be compared.
want=$(grep '^rounds=' "$dir/heaptrack.out") || fail "python printed no result under heaptrack"
grep -qxF "$want" "$dir/churn.out" \
    || fail "python's result differs under libchurn: $(tail -n 1 "$dir/churn.out")"
analyze "$dir/trace.zst" "$dir/analysis.json"
lc=$("$PY" -c 'import json, sys; print(int(json.load(sys.stdin)["totals"]["allocs"]))' \
    <"$dir/analysis.json") || fail "no totals.allocs in churn-analyze --json output"

[ "$ht" -ge 500000 ] || fail "workload too small: heaptrack counted only $ht allocation calls"
"$PY" - "$lc" "$ht" <<'EOF' || exit 1
import sys
lc, ht = int(sys.argv[1]), int(sys.argv[2])
diff = abs(lc - ht) / ht
if diff > 0.005:
    sys.stderr.write("t_python_heaptrack_count: libchurn counted %d allocation calls, heaptrack "
                     "%d: %.3f %% apart (limit 0.5 %%)\n" % (lc, ht, 100 * diff))
    sys.exit(1)
print("t_python_heaptrack_count: libchurn %d, heaptrack %d allocation calls (%.3f %% apart)"
      % (lc, ht, 100 * diff))
EOF
