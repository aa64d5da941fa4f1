#!/bin/sh
# One source for the option tables: docs/options.md's table, the man pages and the bash completion
# are regenerated from shim/base/options.c, analyzer/usage.h and cli/commands.h (build/churn-docgen)
# and must equal the committed copies; every CHURN_* variable the code reads is a row;
# every long option churn-analyze's getopt takes is documented; the man pages render
# without warnings; CHURN_HELP=1 prints the rows and exits 0 without running the program
# or writing a trace.
. test/lib.sh

DOCGEN=$ROOT/build/churn-docgen
[ -x "$DOCGEN" ] || fail "build/churn-docgen is missing: run make"

# ---- the committed copies are the generated ones ----
sh test/tools/options_table.sh extract >"$WORK/table.committed" || fail "docs/options.md has no table markers"
"$DOCGEN" options-table >"$WORK/table.generated" || fail "churn-docgen options-table failed"
diff -u "$WORK/table.committed" "$WORK/table.generated" >"$WORK/table.diff" ||
    fail "docs/options.md's option table differs from shim/base/options.c (run make docs): $(grep "^[-+][^-+]" "$WORK/table.diff" | head -n 2 | tr "\n" " ")"
for page in churn.1 churn-analyze.1; do
    "$DOCGEN" "$page" >"$WORK/$page" || fail "churn-docgen $page failed"
    diff -u "man/$page" "$WORK/$page" >"$WORK/$page.diff" ||
        fail "man/$page differs from its tables (run make docs): $(grep "^[-+][^-+]" "$WORK/$page.diff" | head -n 2 | tr "\n" " ")"
    groff -man -Tutf8 -ww -z "man/$page" 2>"$WORK/$page.warn" || fail "groff cannot read man/$page"
    [ ! -s "$WORK/$page.warn" ] || fail "man/$page: groff warns: $(head -n 1 "$WORK/$page.warn")"
done

# ---- every variable the code reads has a row ----
rows=$(sed -n 's/^| `\(CHURN_[A-Z_]*\)` |.*/\1/p' docs/options.md | sort -u)
read_vars=$( (grep -rhoE 'getenv\("CHURN_[A-Z_]+"' shim analyzer cli | sed 's/.*"\(.*\)"/\1/'
    grep -rhoE '\$\{?CHURN_[A-Z_]+' Makefile test/*.sh test/*/*.sh bench/*.sh 2>/dev/null |
        sed 's/^\${\{0,1\}//') | sort -u)
[ -n "$read_vars" ] || fail "found no CHURN_* variable read anywhere: the search is broken"
for v in $read_vars; do
    echo "$rows" | grep -qx "$v" || fail "$v is read by the code but has no row in shim/base/options.c"
done
echo "$rows" | grep -qx CHURN_EPOCH_SIGNAL || fail "the option table lost CHURN_EPOCH_SIGNAL"

# ---- churn-analyze: every long option of its getopt table is in its man page ----
longopts=$(sed -n 's/^ *{"\([a-z-]*\)", [a-z_]*_argument,.*/\1/p' analyzer/main.c)
[ -n "$longopts" ] || fail "found no long option in analyzer/main.c: the search is broken"
for o in $longopts; do
    [ "$o" = output ] && continue # -o's long spelling
    # (the man page escapes every hyphen of the name too)
    grep -q "^\\\\fB\\\\-\\\\-$(echo "$o" | sed 's/-/\\\\-/g')\\\\fR" man/churn-analyze.1 ||
        fail "churn-analyze --$o is not in analyzer/usage.h (man/churn-analyze.1)"
done
"$ANALYZE" --help >"$WORK/analyze.help" || fail "churn-analyze --help failed"
for o in $longopts; do
    [ "$o" = output ] && continue
    grep -q -- "--$o" "$WORK/analyze.help" || fail "churn-analyze --help does not list --$o"
done

# ---- the completion: generated, and it completes the run flags ----
cmp -s "$ROOT/build/churn.bash" "$(
    "$DOCGEN" completion >"$WORK/churn.bash"
    echo "$WORK/churn.bash"
)" || fail "build/churn.bash is not churn-docgen completion's output"
got=$(bash -c '. "$1"; COMP_WORDS=(churn run --epoch-s); COMP_CWORD=2; _churn; echo "${COMPREPLY[*]}"' \
    _ "$WORK/churn.bash") || fail "the bash completion does not load"
[ "$got" = "--epoch-signal" ] || fail "completing 'churn run --epoch-s' gave '$got'"
got=$(bash -c '. "$1"; COMP_WORDS=(churn an); COMP_CWORD=1; _churn; echo "${COMPREPLY[*]}"' \
    _ "$WORK/churn.bash")
[ "$got" = "analyze" ] || fail "completing 'churn an' gave '$got'"
got=$(bash -c '. "$1"; COMP_WORDS=(churn analyze --p); COMP_CWORD=2; _churn; echo "${COMPREPLY[*]}"' \
    _ "$WORK/churn.bash")
[ "$got" = "--pprof --pid" ] || fail "completing 'churn analyze --p' gave '$got'"

# ---- CHURN_HELP=1: the table, status 0, the program not run, no trace ----
mkdir -p "$WORK/help"
status=0
(cd "$WORK/help" && CHURN_HELP=1 CHURN_OUT="$WORK/help/t.zst" LD_PRELOAD="$SHIM" \
    sh -c 'echo ran >"$0"' "$WORK/help/ran") >"$WORK/help.out" 2>"$WORK/help.err" || status=$?
[ "$status" -eq 0 ] || fail "CHURN_HELP=1 exited with status $status"
[ ! -e "$WORK/help/ran" ] || fail "CHURN_HELP=1 ran the program"
[ -z "$(ls "$WORK/help")" ] || fail "CHURN_HELP=1 left files: $(ls "$WORK/help")"
# All rows but those for tests and builds and those set by libchurn itself.
for v in $(sed -n '/^| `CHURN_[A-Z_]*` | [^|]* | \(tests\|build only\|not an option\)/d
        s/^| `\(CHURN_[A-Z_]*\)` |.*/\1/p' docs/options.md); do
    grep -q "^libchurn: $v " "$WORK/help.err" || fail "CHURN_HELP=1 does not print $v"
done
grep -q "^libchurn: CHURN_TEST_TIMEOUT " "$WORK/help.err" && fail "CHURN_HELP=1 prints the tests' rows"
echo "docs/options.md table, man pages and completion match the tables; CHURN_HELP=1 exits untraced"
