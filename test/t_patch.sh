#!/bin/sh
# The inline patching engine (shim/ways/patch.c) on its own: functions with known first bytes
# (test/programs/patch_engine.c: frame set-up, sub rsp, RIP-relative loads, a 6-byte function,
# endbr64, jmp/call rel32, a rel8 jcc) are redirected and still answer through their
# trampolines; the ones it cannot move safely (shorter than the jmp, a later loop back into
# the moved bytes, a branch among them, jrcxz, a second patch) are refused with their bytes
# untouched; entry hooks keep every argument register and align the stack; empty functions
# (a lone ret, after endbr64 or not, as ld.so's _dl_debug_state) call their replacement, and
# one padded with other than nops is refused; and patching never calls the process's malloc.
. test/lib.sh

gcc -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -Ishim -Iinclude \
    -o "$WORK/patch_engine" test/programs/patch_engine.c shim/ways/patch.c shim/base/arena.c \
    shim/base/os.c shim/base/fds.c shim/base/got.c shim/base/real.c shim/walk/cfi.c \
    shim/walk/cfi_parse.c shim/walk/jitrule.c \
    -lcapstone >"$WORK/build.log" 2>&1 ||
    fail "cannot build the engine test: $(tail -n 1 "$WORK/build.log") (libcapstone-dev installed?)"

status=0
"$WORK/patch_engine" >"$WORK/out" 2>&1 || status=$?
[ "$status" -eq 0 ] || { cat "$WORK/out"; fail "$(grep -m1 FAIL "$WORK/out" || tail -n 1 "$WORK/out")"; }

patched=$(grep -c '^patched ' "$WORK/out" || true)
refused=$(grep -c '^refused ' "$WORK/out" || true)
[ "$patched" -eq 11 ] || fail "$patched functions redirected, expected 11"
[ "$refused" -eq 6 ] || fail "$refused refusals, expected 6"
for reason in 'f_tiny: the function is shorter' 'f_loopback: a later branch' \
    'f_selfloop: a branch in the first bytes' 'f_jrcxz: a loop, jrcxz' \
    'second patch of f_frame: the function is already patched' \
    'e_notnop: the bytes after the ret are not nop padding'; do
    grep -q "^refused $reason" "$WORK/out" || fail "no refusal '$reason' in $WORK/out"
done
grep -q '^hooked args_fn vsum: 2 hook calls, rsp % 16 = 8 in the hook$' "$WORK/out" ||
    fail "entry hooks: $(grep hooked "$WORK/out" || echo 'no hook line')"
grep -q '^empty e_ret e_endbr: 4 calls through the replacement$' "$WORK/out" ||
    fail "empty functions: $(grep empty "$WORK/out" || echo 'no empty line')"
echo "patch engine: 11 redirects exact, 6 refusals clean, 2 entry hooks keep registers, 2 empty functions"
