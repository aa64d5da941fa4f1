#!/bin/sh
# Installs Bun (a JavaScript runtime that links mimalloc into its executable, with none of
# mimalloc's names left in its symbol table) from the npm registry into a cache directory
# reused between test runs, and prints the path of the binary.  The version is pinned so the
# behaviour test/t_bun.sh checks stays the same; a new version must be checked against it.
# CHURN_BUN_CACHE overrides the cache directory (default build/cache/bun).
set -eu
cd "$(dirname "$0")/../.."

VERSION=1.4.5
PACKAGE=@oven/bun-linux-x64
CACHE=${CHURN_BUN_CACHE:-build/cache/bun}
BIN=$CACHE/node_modules/$PACKAGE/bin/bun

die() {
    echo "bun install: $*" >&2
    exit 1
}

if [ -x "$BIN" ] && [ "$(cat "$CACHE/.version" 2>/dev/null)" = "$VERSION" ] &&
    [ "$("$BIN" --version 2>/dev/null)" = "$VERSION" ]; then
    echo "$(cd "$(dirname "$BIN")" && pwd)/bun"
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
[ "$("$BIN" --version 2>&1)" = "$VERSION" ] ||
    die "$BIN does not run on this machine: $("$BIN" --version 2>&1 | tail -n 1)"
echo "$VERSION" >"$CACHE/.version"
echo "$(cd "$(dirname "$BIN")" && pwd)/bun"
