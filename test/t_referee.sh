#!/bin/sh
# libchurn against an independent referee (test/referee/referee.c: a preloaded counter that
# shares no code with libchurn), on heaptrack's own test programs (tests/manual of the
# heaptrack release installed, built here from its sources, never kept in this repository)
# and on programs of ours for the cases easy to get wrong (cross-thread frees through
# std::async, RTLD_DEEPBIND, the C++ runtime's pool, inlined wrappers, realloc's edges,
# temporaries, fork: test/programs/ref_*, deepbind*).  Each program runs once under libchurn and, separately, several times under the
# referee; allocations, frees, bytes allocated, temporaries, the peak (bytes and count) and
# what is live at exit must be equal, exactly where the referee's runs agree, else within the
# spread its runs show (test/referee/compare.py states it).  heaptrack runs each program too,
# and the log has the three side by side (docs/analyzer.md says where heaptrack differs).
#
# heaptrack's sources: $CHURN_HEAPTRACK_SRC (a checkout or a git directory holding the tag
# of the installed version), else ~/.cache/libchurn/heaptrack-src-VERSION (what an earlier
# run found), else the installed version's upstream tarball from `apt-get source
# --download-only`, through a deb-src list of this test's own (no change to the system's).
# Where none can be had, the test says so loudly (NOT RUN, its last line) and compares on
# our programs only.
. test/lib.sh

command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null ||
    fail "heaptrack is not installed (Debian package heaptrack, in the Makefile's TEST_PACKAGES)"
command -v zstd >/dev/null || fail "zstd is not installed"

# The referee is linked, without using them, against the libraries libchurn.so needs, so that
# a program runs with the same objects loaded under both: glibc sizes some of the program's
# own blocks by their number (a thread's TLS vector, the global scope list that a dlopen with
# RTLD_GLOBAL grows).
REF=$WORK/referee.so
same_libs=$(readelf -d "$SHIM" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/-l:\1/p')
gcc -O2 -g -Wall -Wextra -Werror -std=gnu11 -fPIC -shared -fexceptions -fvisibility=hidden \
    -o "$REF" test/referee/referee.c -Wl,--no-as-needed $same_libs -ldl -lpthread \
    >"$WORK/referee.build.log" 2>&1 ||
    fail "cannot build the referee: $(tail -n 1 "$WORK/referee.build.log")"

# ---- heaptrack's test programs ----

version=$(dpkg-query -W -f '${Version}' heaptrack 2>/dev/null || true)
upstream=${version%-*}
upstream=${upstream#*:}
[ -n "$upstream" ] || fail "cannot tell the installed heaptrack's version"
# Kept beside the symbol cache, outside the work tree: a fresh clone on the same machine (CI)
# finds what an earlier run fetched.
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/libchurn/heaptrack-src-$upstream
HT=$WORK/heaptrack-src
mkdir -p "$HT"

# heaptrack_sources: tests/ of the installed heaptrack into $HT, or 1 with the reason in
# $why.
heaptrack_sources() {
    if [ -n "${CHURN_HEAPTRACK_SRC:-}" ]; then
        if git --git-dir="$CHURN_HEAPTRACK_SRC" rev-parse -q --verify "v$upstream^{commit}" >/dev/null 2>&1; then
            git --git-dir="$CHURN_HEAPTRACK_SRC" archive "v$upstream" tests | tar -x -C "$HT" ||
                fail "cannot export tests/ of heaptrack v$upstream from $CHURN_HEAPTRACK_SRC"
        elif [ -d "$CHURN_HEAPTRACK_SRC/tests/manual" ]; then
            cp -R "$CHURN_HEAPTRACK_SRC/tests" "$HT/"
        else
            fail "CHURN_HEAPTRACK_SRC=$CHURN_HEAPTRACK_SRC holds neither tag v$upstream nor tests/manual"
        fi
        mkdir -p "$CACHE" && rm -rf "$CACHE/tests" && cp -R "$HT/tests" "$CACHE/"
        return 0
    fi
    if [ ! -d "$CACHE/tests/manual" ]; then
        rm -rf "$CACHE.tmp"
        mkdir -p "$CACHE.tmp/lists/partial" "$CACHE.tmp/archives/partial"
        suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
        echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
            >"$CACHE.tmp/sources.list"
        apt="-o Dir::Etc::SourceList=$CACHE.tmp/sources.list -o Dir::Etc::SourceParts=/nonexistent
             -o Dir::State::Lists=$CACHE.tmp/lists -o Dir::Cache=$CACHE.tmp"
        if ! (cd "$CACHE.tmp" && timeout 600 apt-get $apt update &&
            timeout 600 apt-get $apt source --download-only heaptrack="$version" &&
            tar -xf heaptrack_"$upstream".orig.tar.*) >"$WORK/apt-source.log" 2>&1; then
            rm -rf "$CACHE.tmp"
            why="apt-get source heaptrack=$version failed ($(grep -m1 -E '^(E|Err):' "$WORK/apt-source.log")); CHURN_HEAPTRACK_SRC=<a heaptrack checkout> runs them"
            return 1
        fi
        src=$(ls -d "$CACHE.tmp"/heaptrack-*/ | head -n 1)
        [ -d "$src/tests/manual" ] || fail "apt-get source heaptrack gave no tests/manual"
        rm -rf "$CACHE"
        mkdir -p "$CACHE"
        cp -R "$src/tests" "$CACHE/"
        rm -rf "$CACHE.tmp"
    fi
    cp -R "$CACHE/tests" "$HT/"
}

HT_PROGRAMS="test_c test_cpp threaded callgraph test_lib test_aggregation signals libc_leaks peak
             inlining embedded_lsan_suppressions dlopen"
why=
if ! heaptrack_sources; then
    # Said on stdout and as the test's last line: the comparison then covers our programs only.
    echo "NOT RUN: heaptrack's tests/manual programs: $why"
    HT_PROGRAMS=
fi
if [ -n "$HT_PROGRAMS" ]; then
M=$HT/tests/manual
[ -f "$M/threaded.cpp" ] || fail "heaptrack's tests/manual has no threaded.cpp"
# test.cpp reads heaptrack's generated util/config.h for HAVE_CFREE only: glibc 2.36 has no cfree.
mkdir -p "$WORK/ht-include/util"
echo "#define HAVE_CFREE 0" >"$WORK/ht-include/util/config.h"

# As its CMakeLists.txt builds them: Debug (-O0) except those it builds RelWithDebInfo.
# benchutil.h defines escape() as a C99 inline function and no outside copy: gnu89 inline
# semantics make the C programs link at -O0.
DEBUG="-g -O0"
REL="-O2 -g -DNDEBUG"
htbuild() {
    name=$1
    shift
    "$@" >"$WORK/$name.build.log" 2>&1 ||
        fail "cannot build heaptrack's $name: $(tail -n 1 "$WORK/$name.build.log")"
}
htbuild test_c gcc $DEBUG -fgnu89-inline -o "$WORK/test_c" "$M/test.c"
htbuild test_cpp g++ $DEBUG -I"$WORK/ht-include" -o "$WORK/test_cpp" "$M/test.cpp"
htbuild threaded g++ $DEBUG -pthread -o "$WORK/threaded" "$M/threaded.cpp"
htbuild callgraph g++ $DEBUG -o "$WORK/callgraph" "$M/callgraph.cpp"
htbuild testlib g++ $DEBUG -fPIC -shared -o "$WORK/libtestlib.so" "$M/lib.cpp"
htbuild test_lib g++ $DEBUG -o "$WORK/test_lib" "$M/test_lib.cpp" -L"$WORK" -ltestlib -Wl,-rpath,"$WORK"
htbuild test_aggregation g++ $DEBUG -o "$WORK/test_aggregation" "$M/test_aggregation.cpp"
htbuild signals g++ $DEBUG -pthread -o "$WORK/signals" "$M/signals.cpp"
htbuild libc_leaks gcc $DEBUG -o "$WORK/libc_leaks" "$M/libc_leaks.c"
htbuild peak gcc -g3 -O0 -o "$WORK/peak" "$M/peak.c"
htbuild inlining g++ $REL -o "$WORK/inlining" "$M/inlining.cpp"
htbuild embedded_lsan_suppressions gcc $REL -o "$WORK/embedded_lsan_suppressions" "$M/embedded_lsan_suppressions.c"
htbuild testlib_indirect g++ $REL -fPIC -shared -o "$WORK/libtestlib_indirect.so" "$M/libindirect.cpp" -ldl
htbuild dlopen g++ $REL -DLIB_PATH="\"$WORK/libtestlib_indirect.so\"" -o "$WORK/dlopen" "$M/dlopen.cpp" -ldl
fi

# ---- ours ----

build_cxx ref_async test/programs/ref_async.cpp -pthread
build_cxx ref_exceptions test/programs/ref_exceptions.cpp
build_c ref_inline test/programs/ref_inline.c
build_c ref_temporary test/programs/ref_temporary.c
build_c ref_realloc test/programs/ref_realloc.c
build_cxx ref_containers test/programs/ref_containers.cpp
build_c ref_fork test/programs/ref_fork.c
build_c deepbind test/programs/deepbind.c -ldl
gcc $PROG_CFLAGS -fPIC -shared -o "$WORK/libdeep.so" test/programs/deepbind_lib.c ||
    fail "cannot build the RTLD_DEEPBIND library"

# ---- runs ----

# run_one LOG COMMAND...: runs $prog, its exit status in $status.  `signals` waits for
# SIGTERM: it gets one once it says it started (found by name among the started process and
# its children, so that heaptrack's wrapper script is not the one signalled).
run_one() {
    log=$1
    shift
    status=0
    if [ "$prog" = signals ]; then
        "$@" >"$log" 2>&1 </dev/null &
        top=$!
        target=
        for _ in $(seq 100); do
            sleep 0.1
            if [ "$(cat /proc/$top/comm 2>/dev/null)" = signals ]; then
                target=$top
            else
                target=$(pgrep -P "$top" -x signals || true)
            fi
            [ -n "$target" ] && grep -q Started "$log" && break
        done
        [ -n "$target" ] || fail "signals did not start: $(tail -n 1 "$log")"
        kill -TERM "$target"
        wait "$top" || status=$?
    else
        "$@" >"$log" 2>&1 </dev/null || status=$?
    fi
}

# run_as LOG COMMAND...: the exit status must be the native run's ($native: test_lib returns
# a sum of its own, not 0).
run_as() {
    run_one "$@"
    [ "$status" -eq "$native" ] ||
        fail "$prog exited with status $status, natively $native: $(tail -n 1 "$1")"
}

args_of() {
    case $1 in
    deepbind) echo "$WORK/libdeep.so now 1000 3" ;;
    *) echo "" ;;
    esac
}

# Programs whose threads interleave run the referee more often, to measure their spread.
runs_of() {
    case $1 in
    threaded | ref_async) echo 5 ;;
    *) echo 3 ;;
    esac
}

# Without glibc's cache of thread stacks every thread gets a stack and a TLS vector of its own,
# so how many of those the program allocates does not depend on how its threads overlap
# (libchurn's slower threads overlap less and reuse more stacks).
export GLIBC_TUNABLES=glibc.pthread.stack_cache_size=0

PROGRAMS="$HT_PROGRAMS ref_async ref_exceptions ref_inline ref_temporary ref_realloc
          ref_containers ref_fork deepbind"
for prog in $PROGRAMS; do
    base=$WORK/$prog
    args=$(args_of $prog)
    rm -f "$base".*zst
    run_one "$base.native.log" "$WORK/$prog" $args
    native=$status
    run_as "$base.churn.log" env CHURN_OUT="$base.zst" LD_PRELOAD="$SHIM" "$WORK/$prog" $args
    [ -s "$base.zst" ] || fail "$prog wrote no trace under libchurn"
    analyze "$base.zst" "$base.json"
    for child in "$base".[0-9]*.zst; do
        [ -e "$child" ] || continue
        analyze "$child" "${child%.zst}.json"
    done
    for n in $(seq "$(runs_of $prog)"); do
        run_as "$base.ref.$n.log" env REFEREE_OUT="$base.ref.$n.json" LD_PRELOAD="$REF" "$WORK/$prog" $args
        [ -s "$base.ref.$n.json" ] || fail "$prog wrote no referee report"
    done
    run_as "$base.ht.log" heaptrack -o "$base.ht" "$WORK/$prog" $args
    zstd -q -dc "$base.ht.zst" >"$base.ht.txt" || fail "cannot read heaptrack's data of $prog"
    heaptrack_print -f "$base.ht.zst" -p 0 -a 0 -T 0 -l 0 >"$base.ht.print" 2>&1 ||
        fail "heaptrack_print cannot read $prog's data: $(tail -n 1 "$base.ht.print")"
done

check "$WORK" $PROGRAMS <test/referee/compare.py
[ -z "$why" ] || echo "NOT RUN: heaptrack's tests/manual programs: $why"
