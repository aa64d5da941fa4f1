#!/bin/sh
# The malloc family's edge cases (test/programs/alloc_api.c) give the same results under the
# shim as without it: NULL or a block, errno, return codes, line by line; with glibc's
# allocator and with tcmalloc and jemalloc preloaded after the shim (each against the same
# allocator alone).
. test/lib.sh

build_c alloc_api test/programs/alloc_api.c

# same LABEL ALLOCATOR ARGS...: native and traced output must be identical.
same() {
    label=$1
    alloc=$2
    shift 2
    status=0
    env ${alloc:+LD_PRELOAD="$alloc"} "$WORK/alloc_api" "$@" >"$WORK/native.$label" ||
        status=$?
    [ "$status" -eq 0 ] || fail "$label: alloc_api exited with status $status without the shim"
    CHURN_PRELOAD_EXTRA=$alloc traced "$WORK/trace.$label.zst" "$WORK/traced.$label" \
        "$WORK/alloc_api" "$@"
    [ -s "$WORK/native.$label" ] || fail "$label: alloc_api printed nothing"
    if ! cmp -s "$WORK/native.$label" "$WORK/traced.$label"; then
        diff "$WORK/native.$label" "$WORK/traced.$label" || true
        fail "$label: under the shim: $(diff "$WORK/native.$label" "$WORK/traced.$label" |
            grep '^>' | head -n 1)"
    fi
}

same glibc ""
[ -f "$TCMALLOC" ] || fail "$TCMALLOC is missing"
same tcmalloc "$TCMALLOC"
[ -f "$JEMALLOC" ] || fail "$JEMALLOC is missing"
same jemalloc "$JEMALLOC" no-pvalloc
echo "allocator edges identical under the shim"
