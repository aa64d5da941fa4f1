#!/bin/sh
# libchurn loads libgcc_s for itself; a program whose start-up registers its .eh_frame with
# __register_frame_info when a weak reference finds one (compiler-rt's crtbegin: workerd)
# must not have it registered because of that, as libgcc_s sorts a registered object's whole
# .eh_frame into the process's memory at its first unwind (7 MB of workerd's RSS).  A program
# that loads libgcc_s itself (a C++ one, through libstdc++) still registers, as it does alone.
. test/lib.sh

build_c frame_c test/programs/frame_registry.c
native=$("$WORK/frame_c") || fail "frame_c failed natively"
[ "$native" = "no unwinder" ] || fail "frame_c natively: '$native', expected 'no unwinder'"
traced "$WORK/c.zst" "$WORK/c.out" "$WORK/frame_c"
[ "$(cat "$WORK/c.out")" = "not registered" ] ||
    fail "frame_c under libchurn: '$(cat "$WORK/c.out")', expected 'not registered'"

# The same source built as C++ and linked with libstdc++, which needs libgcc_s.
g++ $PROG_CFLAGS -x c++ -o "$WORK/frame_cxx" test/programs/frame_registry.c \
    -Wl,--no-as-needed -lstdc++ >"$WORK/frame_cxx.build.log" 2>&1 ||
    fail "cannot compile frame_cxx: $(tail -n 1 "$WORK/frame_cxx.build.log")"
readelf -d "$WORK/frame_cxx" | grep -q 'libstdc++' || fail "frame_cxx does not need libstdc++"
native=$("$WORK/frame_cxx") || fail "frame_cxx failed natively"
[ "$native" = "registered" ] || fail "frame_cxx natively: '$native', expected 'registered'"
traced "$WORK/cxx.zst" "$WORK/cxx.out" "$WORK/frame_cxx"
[ "$(cat "$WORK/cxx.out")" = "registered" ] ||
    fail "frame_cxx under libchurn: '$(cat "$WORK/cxx.out")', expected 'registered'"
echo "frame registry: as without libchurn, for a C and a C++ program"
