#!/bin/sh
# Offline symbolization (analyzer/symbols/symbolize.c) against real processes: a PIE program, a
# library dlopened mid-run whose debug info is reached by .gnu_debuglink, libc through its
# build id under /usr/lib/debug, C++ inlined frames, then the same maps against a binary
# whose debug info is stripped, a rebuilt binary and a deleted library.  Then the persistent
# symbol cache (analyzer/symbols/symcache.c): a warm run answers exactly as a cold one, and by build
# id, so stripping the binary afterwards changes nothing.
LIB_ANALYZER_ONLY=1
. test/lib.sh
# the checks below are about reading debug info: no cache unless a check asks for one
export CHURN_SYMBOL_CACHE=off

B=${WORK#$ROOT/}

# The driver links against the analyzer's objects, as the Makefile builds them, in an
# archive: the linker takes the symbolizer's files and what they need, wherever they live.
OBJS=$(make_var ANALYZER_OBJ)
make -s $OBJS >/dev/null || fail "the analyzer's objects do not build"
ar rcs "$B/analyzer.a" $OBJS || fail "cannot archive the analyzer's objects"
gcc $(make_var CFLAGS) $(make_var ANALYZER_CFLAGS) -Ianalyzer test/tools/symtest.c "$B/analyzer.a" \
    -o "$B/symtest" $(make_var ANALYZER_LIBS) >"$B/symtest.build.log" 2>&1 ||
    fail "cannot build the symtest driver: $(head -n 1 "$B/symtest.build.log")"

build_pie() {
    gcc -O0 -g -fPIE -pie -Wall -Wextra -std=gnu11 -D_GNU_SOURCE "$@" -o "$B/sym_pie" \
        test/programs/sym_pie.c -ldl || fail "cannot build sym_pie"
}
build_pie
gcc -O0 -g -fPIC -shared -Wall -Wextra -std=gnu11 -o "$B/libsymlib.so" test/programs/sym_lib.c ||
    fail "cannot build libsymlib.so"
objcopy --only-keep-debug "$B/libsymlib.so" "$B/libsymlib.so.debug" &&
    objcopy --strip-debug --add-gnu-debuglink="$B/libsymlib.so.debug" "$B/libsymlib.so" ||
    fail "cannot split the library's debug info"
g++ -O2 -g -Wall -Wextra -o "$B/sym_inline" test/programs/sym_inline.cpp ||
    fail "cannot build sym_inline"

"$B/sym_pie" "$PWD/$B/libsymlib.so" > "$B/pie.map" || fail "sym_pie failed"
"$B/sym_inline" > "$B/inline.map" || fail "sym_inline failed"

# Line of the unique "MARK:<label> " comment in a source file.
mark() {
    n=$(grep -c "MARK:$1 " "$2") || true
    [ "$n" = 1 ] || fail "marker MARK:$1 found $n times in $2"
    grep -n "MARK:$1 " "$2" | cut -d: -f1
}

# expect OUTPUT LABEL INDEX INLINED FUNCTION FILE-BASENAME LINE MODULE
expect() {
    got=$(awk -F'\t' -v l="$2" -v i="$3" '$1 == l && $2 == i {
        f = $5; sub(/.*\//, "", f); print $3 "|" $4 "|" f "|" $6 "|" $7; exit }' "$1")
    want="$4|$5|$6|$7|$8"
    [ "$got" = "$want" ] || fail "$2 frame $3 in $1: got '$got', want '$want'"
}

# frames OUTPUT LABEL COUNT
frames() {
    n=$(awk -F'\t' -v l="$2" '$1 == l' "$1" | wc -l)
    [ "$n" -eq "$3" ] || fail "$2 in $1: $n frames, want $3"
}

warnings() { grep -c '^warning' "$1" || true; }

expect_warning() {
    grep -qxF "$(printf 'warning\t%s' "$2")" "$1" || fail "no warning '$2' in $1"
}

bias_of() { awk -v p="$1" '$1 == "module" && $7 == p { print $3; exit }' "$2"; }

PIE="$PWD/$B/sym_pie"
LIB="$PWD/$B/libsymlib.so"
[ -n "$(bias_of "$PIE" "$B/pie.map")" ] && [ "$(bias_of "$PIE" "$B/pie.map")" != 0 ] ||
    fail "sym_pie is not in its own map with a load bias: not a PIE test"
[ -n "$(bias_of "$LIB" "$B/pie.map")" ] || fail "libsymlib.so is not in the map after dlopen"

# libc's debug info comes from libc6-dbg, found by build id.
libc_id=$(awk '$1 == "module" && $7 ~ /\/libc\.so\.6$/ { print $6; exit }' "$B/pie.map")
[ -n "$libc_id" ] || fail "libc.so.6 is not in the map"
libc_debug=/usr/lib/debug/.build-id/$(echo "$libc_id" | cut -c1-2)/$(echo "$libc_id" | cut -c3-).debug
[ -f "$libc_debug" ] || fail "$libc_debug missing: install libc6-dbg"

# Also an ip in the vdso (no file to read: module name only, no warning) and one outside
# every module.
vdso_start=$(awk '$1 == "module" && $7 ~ /vdso/ { print $4; exit }' "$B/pie.map")
[ -n "$vdso_start" ] || fail "the vdso is not in the map"
printf 'ip vdso %s 0\nip nowhere 10 0\n' "$vdso_start" >> "$B/pie.map"

"$B/symtest" "$B/pie.map" > "$B/pie.out" || fail "symtest failed on pie.map"
C=test/programs/sym_pie.c
expect "$B/pie.out" parse 0 0 parse_request sym_pie.c "$(mark parse $C)" sym_pie
expect "$B/pie.out" reply 0 0 build_reply sym_pie.c "$(mark reply $C)" sym_pie
frames "$B/pie.out" parse 1
# A function's own address is not a return address: it must stay inside that function.
awk -F'\t' '$1 == "entry" && $2 == 0 && $4 == "build_reply" && $7 == "sym_pie"' "$B/pie.out" |
    grep -q . || fail "a function's entry address does not resolve to it"
expect "$B/pie.out" lib 0 0 lib_work sym_lib.c "$(mark lib test/programs/sym_lib.c)" libsymlib.so
awk -F'\t' '$1 == "libc" && $2 == 0 && $4 != "?" && $5 ~ /\.c$/ && $6 > 0 && $7 == "libc.so.6"' \
    "$B/pie.out" | grep -q . || fail "no function and file:line inside libc: $(grep '^libc' "$B/pie.out")"
expect "$B/pie.out" vdso 0 0 '?' '?' 0 "$(awk '$1 == "module" && $7 ~ /vdso/ { print $7; exit }' "$B/pie.map")"
expect "$B/pie.out" nowhere 0 0 '?' '?' 0 '?'
frames "$B/pie.out" nowhere 1
[ "$(warnings "$B/pie.out")" = 0 ] || fail "warnings on a clean run: $(grep '^warning' "$B/pie.out")"

"$B/symtest" "$B/inline.map" > "$B/inline.out" || fail "symtest failed on inline.map"
CC=test/programs/sym_inline.cpp
expect "$B/inline.out" inline 0 1 'shop::add_tax(long)' sym_inline.cpp "$(mark inline-call $CC)" sym_inline
expect "$B/inline.out" inline 1 0 'shop::Cart::checkout(long) const' sym_inline.cpp \
    "$(mark inline-site $CC)" sym_inline
frames "$B/inline.out" inline 2
expect "$B/inline.out" anon 0 1 'shop::(anonymous namespace)::round_cents' sym_inline.cpp \
    "$(mark anon-call $CC)" sym_inline
expect "$B/inline.out" anon 1 1 'shop::add_tax(long)' sym_inline.cpp "$(mark anon-site $CC)" sym_inline
expect "$B/inline.out" anon 2 0 'shop::Cart::checkout(long) const' sym_inline.cpp \
    "$(mark inline-site $CC)" sym_inline
frames "$B/inline.out" anon 3
[ "$(warnings "$B/inline.out")" = 0 ] || fail "warnings on a clean run: $(grep '^warning' "$B/inline.out")"

# The symbol cache: a cold run fills it (private files, one per module with debug info), a
# warm run answers the same without reading debug info.
for map in pie inline; do
    for run in cold warm; do
        CHURN_SYMBOL_CACHE=$PWD/$B/cache "$B/symtest" "$B/$map.map" > "$B/$map.$run.out" ||
            fail "symtest failed on $map.map with the cache ($run)"
        cmp -s "$B/$map.out" "$B/$map.$run.out" ||
            fail "$map.map symbolized differently with the cache ($run): $(diff "$B/$map.out" "$B/$map.$run.out" | head -3)"
    done
done
[ "$(stat -c %a "$B/cache")" = 700 ] || fail "the cache directory is not private"
[ -z "$(find "$B/cache" -type f ! -perm 600)" ] || fail "a cache file is not private"
[ "$(find "$B/cache" -type f | wc -l)" -ge 3 ] || fail "expected cache files for sym_pie, libsymlib.so, libc"
# A damaged file is ignored and written anew.
rm -rf "$B/cache"
CHURN_SYMBOL_CACHE=$PWD/$B/cache "$B/symtest" "$B/pie.map" > /dev/null || fail "symtest failed (cache)"
for f in "$B"/cache/*; do printf 'churn-symbols 1\nzz 1\n' > "$f"; done
CHURN_SYMBOL_CACHE=$PWD/$B/cache "$B/symtest" "$B/pie.map" > "$B/pie.damaged.out" ||
    fail "symtest failed on a damaged cache"
cmp -s "$B/pie.out" "$B/pie.damaged.out" || fail "a damaged cache changed the answers"
! grep -q '^zz' "$B"/cache/* || fail "a damaged cache file was not rewritten"

# Same build id, debug info stripped: names from the symbol table, no file:line.
objcopy --strip-debug "$B/sym_pie" || fail "cannot strip sym_pie"
# ... unless the cache already knows that build id.
CHURN_SYMBOL_CACHE=$PWD/$B/cache "$B/symtest" "$B/pie.map" > "$B/pie.cached.out" ||
    fail "symtest failed on the stripped binary with the cache"
cmp -s "$B/pie.out" "$B/pie.cached.out" || fail "the cache did not answer for the stripped binary's build id"
"$B/symtest" "$B/pie.map" > "$B/stripped.out" || fail "symtest failed on the stripped binary"
expect "$B/stripped.out" parse 0 0 parse_request '?' 0 sym_pie
# the warning says where the debug file was looked for: by build id (no .gnu_debuglink)
id=$(readelf -n "$B/sym_pie" | sed -n 's/^ *Build ID: //p')
[ -n "$id" ] || fail "sym_pie has no build id note"
expect_warning "$B/stripped.out" \
    "module $PIE: no debug info (looked for /usr/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug); function names from its symbol table, no file:line"

# Rebuilt with a change: the old map's build id no longer matches, nothing from that file.
build_pie -DREBUILT
"$B/symtest" "$B/pie.map" > "$B/rebuilt.out" || fail "symtest failed on the rebuilt binary"
expect "$B/rebuilt.out" parse 0 0 '?' '?' 0 sym_pie
expect "$B/rebuilt.out" lib 0 0 lib_work sym_lib.c "$(mark lib test/programs/sym_lib.c)" libsymlib.so
expect_warning "$B/rebuilt.out" \
    "module $PIE: build id differs from the traced binary (rebuilt?); not symbolized"
[ "$(warnings "$B/rebuilt.out")" = 1 ] || fail "expected one warning: $(grep '^warning' "$B/rebuilt.out")"

# The library is gone: module-only frames and a warning.
rm "$LIB"
"$B/symtest" "$B/pie.map" > "$B/missing.out" || fail "symtest failed with the library missing"
expect "$B/missing.out" lib 0 0 '?' '?' 0 libsymlib.so
expect_warning "$B/missing.out" "module $LIB: No such file or directory; not symbolized"
