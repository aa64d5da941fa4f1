#!/bin/sh
# Installs deno (a JavaScript runtime whose stripped executable carries V8: no symbol table,
# only V8's own messages among its bytes) from the npm registry into a cache directory reused
# between test runs, and prints the path of the binary.  The version is pinned so the
# behaviour test/t_deno.sh checks stays the same; a new version must be checked against it.
# CHURN_DENO_CACHE overrides the cache directory (default build/cache/deno).
set -eu
cd "$(dirname "$0")/../.."

VERSION=2.9.6
PACKAGE=@deno/linux-x64-glibc
CACHE=${CHURN_DENO_CACHE:-build/cache/deno}
BIN=$CACHE/node_modules/$PACKAGE/deno

die() {
    echo "deno install: $*" >&2
    exit 1
}

version() {
    "$BIN" --version 2>/dev/null | head -n 1 | cut -d ' ' -f 1-2
}

if [ -x "$BIN" ] && [ "$(cat "$CACHE/.version" 2>/dev/null)" = "$VERSION" ] &&
    [ "$(version)" = "deno $VERSION" ]; then
    echo "$(cd "$(dirname "$BIN")" && pwd)/deno"
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
[ "$(version)" = "deno $VERSION" ] ||
    die "$BIN does not run on this machine: $("$BIN" --version 2>&1 | tail -n 1)"
echo "$VERSION" >"$CACHE/.version"
echo "$(cd "$(dirname "$BIN")" && pwd)/deno"
