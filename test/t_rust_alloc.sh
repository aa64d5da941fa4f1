#!/bin/sh
# Rust programs (test/programs/rust_alloc.rs, built with Debian's rustc): every allocation
# goes through the __rust_alloc shims, which shim/ways/way_named.c patches.  With the default
# global allocator they end in malloc (counted once, by the outermost entry); with a
# #[global_allocator] on a static arena no malloc is ever called, so only the shims see them.
# Every epoch's counts, bytes and live change must be exact in both.  Stripped, the shims'
# names are gone: the default allocator's calls are still traced, exactly, through malloc,
# and stderr stays quiet; the bump allocator's are not, and stderr must say plainly that
# libchurn cannot see it.
. test/lib.sh

RUSTC=/usr/bin/rustc
[ -x "$RUSTC" ] || fail "$RUSTC missing: apt-get install rustc"
for variant in default bump; do
    cfg=
    [ "$variant" = bump ] && cfg="--cfg bump"
    # shellcheck disable=SC2086
    "$RUSTC" -O -g $cfg -o "$WORK/rust_$variant" test/programs/rust_alloc.rs \
        >"$WORK/rust_$variant.build.log" 2>&1 ||
        fail "cannot compile rust_alloc.rs ($variant): $(tail -n 1 "$WORK/rust_$variant.build.log")"
    strip -o "$WORK/rust_${variant}_stripped" "$WORK/rust_$variant"
done
blind="the executable is stripped (no .symtab) and calls no malloc through the PLT: libchurn cannot see the allocator it carries"
for variant in default bump default_stripped bump_stripped; do
    traced "$WORK/rust_$variant.zst" "$WORK/rust_$variant.out" "$WORK/rust_$variant"
    err="$WORK/rust_$variant.out.err"
    case $variant in
    bump_stripped)
        grep -q "$blind" "$err" || fail "rust_$variant: stderr does not say it is blind: $(head -n 1 "$err")"
        continue ;;
    default_stripped)
        ! grep -q "libchurn:" "$err" || fail "rust_$variant: unexpected stderr: $(head -n 1 "$err")" ;;
    *)
        grep -q "tracing Rust global allocator in the executable through the patch way in" "$err" ||
            fail "rust_$variant: the Rust shims were not patched: $(head -n 1 "$err")" ;;
    esac
    analyze "$WORK/rust_$variant.zst" "$WORK/rust_$variant.json"
    check "$WORK/rust_$variant.json" "$WORK/rust_$variant.out" "rust_$variant" <<'PY'
import sys
from churncheck import *
report, prog = load(sys.argv[1]), sys.argv[3]
expect_phases(report, sys.argv[2], prog, 3)
name = field(report, "metadata", "allocator")
if "stripped" not in prog and "Rust global allocator in the executable via patch" not in name:
    fail("%s: the report's allocator %r does not name the Rust shims" % (prog, name))
print("%s: 3 phases exact; allocator %s" % (prog, name))
PY
done
