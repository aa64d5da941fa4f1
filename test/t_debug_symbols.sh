#!/bin/sh
# A stripped executable whose symbols are in its separate debug file (as Debian's -dbgsym
# packages and `objcopy --only-keep-debug` leave them): the shim reads the debug file's
# .symtab where gdb would find it (by build id under /usr/lib/debug, or by .gnu_debuglink
# beside the file or in .debug/ beside it), and only when its build id is the file's.  So an
# allocator under its own names (prefixed_alloc.c's je_ stand-in) is traced exactly, and
# CHURN_EPOCH_AT finds a function by name; a debug file of another build is refused.  A
# stripped library's hidden allocator is found by its debug file's local symbols.
. test/lib.sh

strip_beside() { # NAME: NAME.debug beside the stripped NAME, linked by .gnu_debuglink
    (cd "$WORK" && objcopy --only-keep-debug "$1" "$1.debug" && strip --strip-all "$1" &&
        objcopy --add-gnu-debuglink="$1.debug" "$1") || fail "cannot strip $1"
    if readelf -S "$WORK/$1" | grep -q '\.symtab'; then
        fail "$1 still has a .symtab"
    fi
}

# traced_exact NAME BINARY WAY-LINE LABEL: BINARY is traced through WAY-LINE (a pattern of its
# stderr) and its two phases come out exact
traced_exact() {
    traced "$WORK/$1.zst" "$WORK/$1.out" "$2"
    grep -q "$3" "$WORK/$1.out.err" || fail "$4: not traced: $(head -n 1 "$WORK/$1.out.err")"
    analyze "$WORK/$1.zst" "$WORK/$1.json"
    LABEL="$4" check "$WORK/$1.json" "$WORK/$1.out" <<'PY'
import os, sys
from churncheck import *
expect_phases(load(sys.argv[1]), sys.argv[2], os.environ["LABEL"], 2)
print("%s: 2 phases exact" % os.environ["LABEL"])
PY
}

build_c je test/programs/prefixed_alloc.c -DPREFIX=je_
strip_beside je
traced_exact je "$WORK/je" "tracing jemalloc in the executable through the patch way in" \
    "stripped je_ stand-in with its debug file beside it"

# The same in .debug/ beside it
mkdir -p "$WORK/.debug" && mv "$WORK/je.debug" "$WORK/.debug/je.debug"
traced "$WORK/je2.zst" "$WORK/je2.out" "$WORK/je"
grep -q "tracing jemalloc in the executable" "$WORK/je2.out.err" ||
    fail "debug file in .debug/: not traced: $(head -n 1 "$WORK/je2.out.err")"

# A debug file of another build under the linked name: its build id differs, it is not read
build_c other test/programs/prefixed_alloc.c -DPREFIX=je_ -DHEAP_FREE_ALL
(cd "$WORK" && objcopy --only-keep-debug other .debug/je.debug) || fail "objcopy other"
traced "$WORK/je3.zst" "$WORK/je3.out" "$WORK/je"
if grep -q "tracing jemalloc" "$WORK/je3.out.err"; then
    fail "a debug file of another build was taken for the executable's"
fi

# CHURN_EPOCH_AT names a function of a stripped executable that only its debug file names
build_c ticks test/programs/ticks.c
strip_beside ticks
"$WORK/ticks" >"$WORK/ticks.native" || fail "ticks failed natively"
CHURN_EPOCH_AT=tick traced "$WORK/ticks.zst" "$WORK/ticks.out" "$WORK/ticks"
cmp -s "$WORK/ticks.native" "$WORK/ticks.out" || fail "ticks' output changed under the shim"
analyze "$WORK/ticks.zst" "$WORK/ticks.json"
check "$WORK/ticks.json" <<'PY'
import sys
from churncheck import *
epochs = [e for e in field(load(sys.argv[1]), "epochs") if e["summary"]]
kept = [e for e in epochs if e["allocs"] == 1 and e["alloc_bytes"] == 256]
if len(kept) < 49:
    fail("CHURN_EPOCH_AT=tick in the stripped ticks: %d epochs of one 256-byte allocation, "
         "not 49 or 50 (%d epochs)" % (len(kept), len(epochs)))
print("ticks: %d epochs begun at tick, named by the debug file" % len(kept))
PY

# A stripped library whose allocator is hidden (its je_ names local, called inside it only):
# only the library's debug file names them, as its local symbols (the global ones are its
# .dynsym's), and the allocator is traced exactly through them.
echo '{ global: lib_main; local: *; };' >"$WORK/libje.map"
gcc $PROG_CFLAGS -std=gnu11 -fPIC -shared -Dmain=lib_main -DPREFIX=je_ \
    -Wl,--version-script="$WORK/libje.map" -o "$WORK/libje.so" test/programs/prefixed_alloc.c \
    >"$WORK/libje.build.log" 2>&1 || fail "cannot build libje.so: $(tail -n 1 "$WORK/libje.build.log")"
readelf -sW "$WORK/libje.so" | awk '$8 == "je_malloc" && $5 == "LOCAL" { found = 1 } END { exit !found }' ||
    fail "je_malloc is not a local symbol of libje.so"
strip_beside libje.so
echo 'int lib_main(void); int main(void) { return lib_main(); }' >"$WORK/libje_main.c"
build_c libje_main "$WORK/libje_main.c" -L"$WORK" -lje -Wl,-rpath,"$WORK"
traced_exact libje "$WORK/libje_main" "tracing jemalloc in .*libje.so through the patch way in" \
    "hidden je_ allocator of a stripped library with its debug file"
