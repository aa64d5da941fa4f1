#!/bin/sh
# The analyzer opens only regular files, without blocking, wherever a path comes from the
# command line or from a trace: a FIFO, a device or a directory given as the trace is refused
# with one line; one named as a MODULE path, or found where a module's .gnu_debuglink points,
# leaves that module unsymbolized with a warning, and the report is written.  Each run is
# under `timeout`: a blocking open() would hang.
LIB_ANALYZER_ONLY=1
. test/lib.sh
T=$WORK

mkfifo "$T/fifo" "$T/module_fifo"
mkdir "$T/dir"

# A small ELF with its debug info split off behind a .gnu_debuglink, and that debug file
# then replaced by a FIFO where the standard lookup looks (next to the file).
mkdir "$T/bin"
cat >"$T/prog.c" <<'EOF'
int main(void) { return 0; }
EOF
gcc -g -O0 -o "$T/bin/prog" "$T/prog.c" || fail "cannot compile prog.c"
objcopy --only-keep-debug "$T/bin/prog" "$T/bin/prog.debug"
objcopy --strip-debug --add-gnu-debuglink="$T/bin/prog.debug" "$T/bin/prog"
rm "$T/bin/prog.debug"
mkfifo "$T/bin/prog.debug"
main_off=$(nm "$T/bin/prog" | awk '$3 == "main" { print $1 }')
[ -n "$main_off" ] || fail "no main in prog's symbols"

python3 - "$T" "$main_off" <<'PY'
import os, sys
sys.path.insert(0, "test/tools")
import mktrace
T, main_off = sys.argv[1], int(sys.argv[2], 16)
BIAS = 0x555500000000

def trace(name, path, ip_off=0x40):
    recs = mktrace.prelude(0, 0, modules=[(0, BIAS, BIAS, BIAS + 0x100000, "", path)])
    recs += [["stack", 1, [BIAS + ip_off]], ["thread", 1], ["epoch", 0],
             ["alloc", 0, 0x100000, 32, 0, 1], ["exit", 1, 0]]
    desc = {"segments": [{"seq": 0, "first_epoch": 0, "last_epoch": 0, "records": recs}]}
    open(os.path.join(T, name), "wb").write(mktrace.build(desc))

trace("mod_fifo.trace", os.path.join(T, "module_fifo"))
trace("mod_zero.trace", "/dev/zero")
trace("mod_dir.trace", os.path.join(T, "dir"))
trace("mod_debuglink.trace", os.path.join(T, "bin", "prog"), main_off + 4)  # inside main
PY

# refused TRACE: exit 1, one line naming the file and the reason, within the time limit.
refused() {
    status=0
    timeout 20 "$ANALYZE" --json "$1" >"$T/out" 2>"$T/err" || status=$?
    [ "$status" != 124 ] || fail "$1: the analyzer blocked (killed after 20 s)"
    [ "$status" = 1 ] || fail "$1: exit $status, want 1"
    [ ! -s "$T/out" ] || fail "$1: wrote a report"
    [ "$(wc -l <"$T/err")" = 1 ] || fail "$1: stderr is not one line: $(cat "$T/err")"
    grep -q "^churn-analyze: $1: not a regular file$" "$T/err" ||
        fail "$1: message '$(cat "$T/err")'"
}
refused "$T/fifo"
refused /dev/zero
refused "$T/dir"

# unsymbolized TRACE PATH WARNING: the report is written, with a warning about that module.
unsymbolized() {
    status=0
    timeout 20 "$ANALYZE" --json "$T/$1" >"$T/$1.json" 2>"$T/err" || status=$?
    [ "$status" != 124 ] || fail "$1: the analyzer blocked (killed after 20 s)"
    [ "$status" = 0 ] || fail "$1: exit $status: $(tail -n 1 "$T/err")"
    check "$T/$1.json" "$2" "$3" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
path, pattern = sys.argv[2], sys.argv[3]
assert d["totals"]["allocs"] == 1, d["totals"]
if not any(re.match(re.escape("module %s: " % path) + pattern, w) for w in d["warnings"]):
    sys.exit("FAIL: no warning 'module %s: %s' in %s" % (path, pattern, d["warnings"]))
PY
}
unsymbolized mod_fifo.trace "$T/module_fifo" "not a regular file; not symbolized"
unsymbolized mod_zero.trace /dev/zero "not a regular file; not symbolized"
unsymbolized mod_dir.trace "$T/dir" "not a regular file; not symbolized"
# the module itself is a regular ELF; only its debug file is a FIFO: names from its symbols
unsymbolized mod_debuglink.trace "$T/bin/prog" "no debug info \\(looked for .*prog\\.debug in $T/bin, $T/bin/\\.debug, /usr/lib/debug$T/bin\\)"
check "$T/mod_debuglink.trace.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
frames = [f for c in d["growth"] for f in c["stack"]]
if not any(f.startswith("main (prog+") for f in frames):
    sys.exit("FAIL: main not named from the symbol table: %s" % frames)
PY
echo "t_analyzer_opens: ok"
