#!/bin/sh
# Installs ast-grep (a Rust command-line tool whose executable keeps its symbol table, the
# Rust global allocator's shims included, and allocates through glibc's malloc) from the npm
# registry into a cache directory reused between test runs, and prints the path of the binary.
# The version is pinned so the behaviour test/t_rust_cli.sh checks stays the same.
# CHURN_ASTGREP_CACHE overrides the cache directory (default build/cache/ast-grep).
set -eu
cd "$(dirname "$0")/../.."

VERSION=0.51.1
PACKAGE=@ast-grep/cli-linux-x64-gnu
CACHE=${CHURN_ASTGREP_CACHE:-build/cache/ast-grep}
BIN=$CACHE/node_modules/$PACKAGE/ast-grep

die() {
    echo "ast-grep install: $*" >&2
    exit 1
}

if [ -x "$BIN" ] && [ "$(cat "$CACHE/.version" 2>/dev/null)" = "$VERSION" ] &&
    [ "$("$BIN" --version 2>/dev/null)" = "ast-grep $VERSION" ]; then
    echo "$(cd "$(dirname "$BIN")" && pwd)/ast-grep"
    exit 0
fi

. test/npm.sh
need_npm "$PACKAGE@$VERSION"

mkdir -p "$CACHE"
log=$CACHE/npm-install.log
rm -f "$CACHE/.version"
# The platform package holds the binary itself and needs no install script.
npm_run "$log" "$PACKAGE@$VERSION" install --prefix "$CACHE" --no-save --no-audit --no-fund \
    --no-package-lock --ignore-scripts "$PACKAGE@$VERSION"

[ -x "$BIN" ] || die "npm installed $PACKAGE@$VERSION but $BIN is missing"
[ "$("$BIN" --version 2>&1)" = "ast-grep $VERSION" ] ||
    die "$BIN does not run on this machine: $("$BIN" --version 2>&1 | tail -n 1)"
echo "$VERSION" >"$CACHE/.version"
echo "$(cd "$(dirname "$BIN")" && pwd)/ast-grep"
