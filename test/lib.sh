# Sourced by every test/t_*.sh (run from the repository root).  Each helper either succeeds or
# ends the test with `fail`, whose message is the last line of output: test/run.sh shows it.
#
# A test of the analyzer alone sets LIB_ANALYZER_ONLY=1 before sourcing this file: it needs
# no shim.  CHURN_TEST_DECODER=slow (set by test/run.sh for the tests marked
# "# decoders: fast and slow") points ANALYZE at build/slow/churn-analyze, the analyzer
# without its decoding shortcuts (Makefile, `make slow`), and gives the run its own WORK.
set -eu

ROOT=$(pwd)
SHIM=$ROOT/build/libchurn.so
TCMALLOC=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
JEMALLOC=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
TEST_NAME=$(basename "$0" .sh)
case ${CHURN_TEST_DECODER:-fast} in
fast)
    ANALYZE=$ROOT/build/churn-analyze
    WORK=$ROOT/build/test/${TEST_NAME#t_}
    ;;
slow)
    ANALYZE=$ROOT/build/slow/churn-analyze
    WORK=$ROOT/build/test/${TEST_NAME#t_}.slow
    ;;
*)
    echo "FAIL: CHURN_TEST_DECODER=$CHURN_TEST_DECODER: fast or slow"
    exit 1
    ;;
esac
PROG_CFLAGS="-O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -Iinclude -Itest/programs"

# A TCP port for a test's server (port + 1 for a second one): below the kernel's ephemeral
# range (32768 and up), where no client connection, open or closing, can hold it, and apart
# for tests run at once.
port=$((10000 + $$ % 20000))

fail() {
    echo "FAIL: $*"
    exit 1
}

# The real components are required: a test never passes without them.
require_built() {
    [ -n "${LIB_ANALYZER_ONLY:-}" ] || [ -f "$SHIM" ] || fail "build/libchurn.so is missing: run make"
    [ -x "$ANALYZE" ] || fail "${ANALYZE#$ROOT/} is missing: run make all slow"
}

# make_var NAME: a variable of the Makefile, for tests that build parts their own way and
# must use the Makefile's objects and flags.
make_var() {
    make -s --no-print-directory "print-$1"
}

# The CPythons a test runs, in $pythons.  pythons_311: Debian's python3.11, which the test
# needs, and pyenv's 3.11.7 when it is installed.  pythons_with_frames: those of 3.11 to 3.13
# (the versions whose frames libchurn names and whose pymalloc it traces) that this machine
# has.  Each one missing is said.
PYENV=${PYENV_ROOT:-$HOME/.pyenv}/versions
pythons_311() {
    pythons=/usr/bin/python3.11
    [ -x /usr/bin/python3.11 ] || fail "/usr/bin/python3.11 is missing (Debian 12's python3.11)"
    if [ -x "$PYENV/3.11.7/bin/python3.11" ]; then
        pythons="$pythons $PYENV/3.11.7/bin/python3.11"
    else
        echo "NOT RUN: CPython 3.11.7: no $PYENV/3.11.7/bin/python3.11 on this machine (pyenv's)"
    fi
}
pythons_with_frames() {
    pythons=
    for py in /usr/bin/python3.11 "$PYENV/3.11.7/bin/python3.11" "$PYENV/3.12.1/bin/python3.12" \
        "$PYENV/3.13.0/bin/python3.13"; do
        if [ -x "$py" ]; then
            pythons="$pythons $py"
        else
            echo "NOT RUN: $py is not on this machine (pyenv's, or Debian 12's python3.11)"
        fi
    done
}

# fixed_layout: runs the test (again, from its start) under `setarch -R`, the personality
# ADDR_NO_RANDOMIZE, which every program it starts inherits: one address layout in every
# run, for tests that compare the bytes of runs of a program that asks for more or less by
# where its memory lies.  CPython is one: PyLong_FromVoidPtr keys its dicts of subclasses
# and its compiler's symbol tables by object address, an int of one 30-bit digit (28 bytes)
# below 1 GiB and of two (32 bytes) above; Debian's python3.11 is not position-independent,
# and the kernel puts its heap anywhere in the GiB after its data, above 1 GiB in about 1
# run of 100 (3 of 300 here), and then the same program asks for exactly 1,000 bytes more.
fixed_layout() {
    [ $((0x$(cat /proc/self/personality) & 0x40000)) -eq 0 ] || return 0
    [ -z "${FIXED_LAYOUT_RELAID:-}" ] || fail "setarch -R left address randomization on"
    FIXED_LAYOUT_RELAID=1 exec setarch -R sh "$0"
}

# The flags that select the decoder under test when a test compiles analyzer/read/records.c itself.
decoder_cflags() {
    [ "${CHURN_TEST_DECODER:-fast}" = fast ] || make_var DECODE_SLOW
}

# The allocators the shim is tested over: glibc's own, and gperftools tcmalloc and jemalloc
# preloaded after the shim.  use_allocator NAME exports CHURN_PRELOAD_EXTRA for `traced`
# (empty for glibc); an allocator that is not installed fails the test.
ALLOCATORS="glibc tcmalloc jemalloc"
use_allocator() {
    case $1 in
    glibc) CHURN_PRELOAD_EXTRA= ;;
    tcmalloc | gperftools) CHURN_PRELOAD_EXTRA=$TCMALLOC ;;
    jemalloc) CHURN_PRELOAD_EXTRA=$JEMALLOC ;;
    *) fail "use_allocator: no allocator $1" ;;
    esac
    [ -z "$CHURN_PRELOAD_EXTRA" ] || [ -f "$CHURN_PRELOAD_EXTRA" ] ||
        fail "$CHURN_PRELOAD_EXTRA is missing: make test-deps (libgoogle-perftools-dev libjemalloc-dev)"
    export CHURN_PRELOAD_EXTRA
}

# build_c NAME SOURCE [extra gcc args...]: compiles a test program into $WORK/NAME.
build_c() {
    name=$1
    src=$2
    shift 2
    gcc $PROG_CFLAGS -std=gnu11 -o "$WORK/$name" "$src" "$@" >"$WORK/$name.build.log" 2>&1 ||
        fail "cannot compile $src: $(tail -n 1 "$WORK/$name.build.log")"
}

# http_serve NAME PIDFILE SIGNAL LOAD CMD...: CMD (under timeout) in the background, until it
# wrote PIDFILE and accepts on 127.0.0.1:$port; then test/tools/http_load.py $port LOAD (its
# arguments, as one word) into NAME.load, SIGNAL to the pid in PIDFILE, and CMD's exit
# status into NAME.status.  The web server tests' one run (t_nginx.sh, t_lighttpd.sh).
http_serve() {
    name=$1 pidfile=$2 signal=$3 load=$4
    shift 4
    rm -f "$pidfile"
    timeout 120 "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    pid=$!
    n=0
    until [ -s "$pidfile" ] &&
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2>/dev/null; do
        n=$((n + 1))
        [ $n -lt 300 ] || { kill $pid; fail "$name: the server did not start: $(tail -n 1 "$WORK/$name.err")"; }
        sleep 0.1
    done
    # shellcheck disable=SC2086
    python3 test/tools/http_load.py "$port" $load >"$WORK/$name.load" ||
        { kill $pid; fail "$name: the requests failed"; }
    kill -"$signal" "$(cat "$pidfile")"
    status=0
    wait $pid || status=$?
    echo $status >"$WORK/$name.status"
}

# serve_like_native WHAT ANSWERS: the test's own serve NAME PREFIX... (its server under
# http_serve) natively, then three times under `churn run` into t1.zst .. t3.zst: each exits 0
# and answers as natively, whose answers match the grep pattern ANSWERS.  The web server
# tests' runs (t_nginx.sh, t_lighttpd.sh).
serve_like_native() {
    what=$1 answers=$2
    serve native
    [ "$(cat "$WORK/native.status")" = 0 ] || fail "native $what exited with status $(cat "$WORK/native.status")"
    grep -q "$answers" "$WORK/native.load" || fail "native $what answered $(cat "$WORK/native.load")"
    for run in 1 2 3; do
        rm -f "$WORK"/t$run.*
        serve churn$run "$ROOT/build/churn" run -o "$WORK/t$run.zst"
        [ "$(cat "$WORK/churn$run.status")" = 0 ] ||
            fail "run $run: $what under churn run exited with status $(cat "$WORK/churn$run.status"): $(tail -n 1 "$WORK/churn$run.err")"
        cmp -s "$WORK/native.load" "$WORK/churn$run.load" ||
            fail "run $run: $what answered differently under churn run: $(cat "$WORK/churn$run.load")"
    done
}

# serve_live ARGS...: `churn serve --listen 127.0.0.1:$port ARGS` in the background, its pid
# in SERVE_PID and its stderr in $WORK/serve.err, once it accepts connections.
serve_live() {
    "$ROOT/build/churn" serve --listen 127.0.0.1:$port "$@" 2>"$WORK/serve.err" &
    SERVE_PID=$!
    n=0
    until python3 -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2>/dev/null; do
        n=$((n + 1))
        kill -0 $SERVE_PID 2>/dev/null || fail "churn serve did not start: $(tail -n 1 "$WORK/serve.err")"
        [ $n -lt 300 ] || fail "churn serve does not accept on 127.0.0.1:$port"
        sleep 0.1
    done
}

build_cxx() {
    name=$1
    src=$2
    shift 2
    g++ $PROG_CFLAGS -std=gnu++17 -o "$WORK/$name" "$src" "$@" >"$WORK/$name.build.log" 2>&1 ||
        fail "cannot compile $src: $(tail -n 1 "$WORK/$name.build.log")"
}

# traced TRACE STDOUT PROGRAM [ARGS...]: runs PROGRAM under the shim (extra variables such as
# CHURN_SEGMENT_KB come from the caller's environment); the program checks its own results,
# so a non-zero exit fails the test with the program's last stderr line.  CHURN_PRELOAD_EXTRA
# names allocator libraries to preload after the shim.
traced() {
    trace=$1
    out=$2
    shift 2
    rm -f "$trace"
    status=0
    env CHURN_OUT="$trace" LD_PRELOAD="$SHIM${CHURN_PRELOAD_EXTRA:+ $CHURN_PRELOAD_EXTRA}" \
        "$@" >"$out" 2>"$out.err" || status=$?
    if [ "$status" -ne 0 ]; then
        cat "$out.err"
        fail "$* exited with status $status under the shim: $(tail -n 1 "$out.err")"
    fi
    [ -s "$trace" ] || fail "$* ran under the shim but wrote no trace $trace"
}

# analyze TRACE JSON [OPTION...]: the analyzer must succeed and print one JSON object.
analyze() {
    status=0
    in=$1 out=$2
    shift 2
    "$ANALYZE" --json "$@" "$in" >"$out" 2>"$out.err" || status=$?
    if [ "$status" -ne 0 ]; then
        cat "$out.err"
        fail "churn-analyze --json $in exited with status $status: $(tail -n 1 "$out.err")"
    fi
}

# check ARGS... < python: runs the assertions on stdin with test/churncheck.py importable.
check() {
    PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$ROOT/test" python3 - "$@"
}

# build_pprof: the real pprof, built from Debian's golang-github-google-pprof-dev sources,
# as $WORK/pprof.
build_pprof() {
    command -v go >/dev/null || fail "go is missing (Debian golang-go; make check installs it)"
    [ -f /usr/share/gocode/src/github.com/google/pprof/pprof.go ] ||
        fail "pprof sources are missing (Debian golang-github-google-pprof-dev)"
    GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$ROOT/build/cache/go" GOFLAGS= \
        go build -o "$WORK/pprof" github.com/google/pprof >"$WORK/go.log" 2>&1 ||
        fail "cannot build pprof: $(tail -n 1 "$WORK/go.log")"
}

# build_go NAME DIR [GO BUILD FLAGS...]: the Go module in DIR (no dependencies) as $WORK/NAME,
# with Debian's go and its caches in the build tree (a CI environment need not have HOME).
build_go() {
    bname=$1 bdir=$2
    shift 2
    command -v go >/dev/null || fail "go is missing (Debian golang-go; make check installs it)"
    (cd "$bdir" && GOPROXY=off GOFLAGS=-mod=mod GOCACHE="$ROOT/build/cache/go" \
        GOPATH="$ROOT/build/cache/gopath" go build "$@" -o "$WORK/$bname" .) \
        >"$WORK/$bname.build.log" 2>&1 ||
        fail "cannot build $bdir: $(tail -n 1 "$WORK/$bname.build.log")"
}

require_built
# Each test symbolizes from debug info, never from an earlier run's symbol cache.
export CHURN_SYMBOL_CACHE="$WORK/symbol-cache"
rm -rf "$WORK"
mkdir -p "$WORK"
