#!/bin/sh
# Installs Biome (a Rust command-line tool from the npm registry whose stripped executable
# carries jemalloc: its strings name jemalloc, its symbol tables keep none of its functions)
# into a cache directory reused between test runs, and prints the path of the binary.  The
# version is pinned so the behaviour test/t_rust_cli.sh checks stays the same.
# CHURN_BIOME_CACHE overrides the cache directory (default build/cache/biome).
set -eu
cd "$(dirname "$0")/../.."

VERSION=2.6.8
PACKAGE=@biomejs/cli-linux-x64
CACHE=${CHURN_BIOME_CACHE:-build/cache/biome}
BIN=$CACHE/node_modules/$PACKAGE/biome

die() {
    echo "biome install: $*" >&2
    exit 1
}

if [ -x "$BIN" ] && [ "$(cat "$CACHE/.version" 2>/dev/null)" = "$VERSION" ] &&
    [ "$("$BIN" --version 2>/dev/null)" = "Version: $VERSION" ]; then
    echo "$(cd "$(dirname "$BIN")" && pwd)/biome"
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
[ "$("$BIN" --version 2>&1)" = "Version: $VERSION" ] ||
    die "$BIN does not run on this machine: $("$BIN" --version 2>&1 | tail -n 1)"
echo "$VERSION" >"$CACHE/.version"
echo "$(cd "$(dirname "$BIN")" && pwd)/biome"
