#!/bin/sh
# Installs Cloudflare's workerd from the npm registry into a cache directory reused between test
# runs, and prints the path of the binary.  The version is pinned so that the symbols the shim
# looks up (tcmalloc hooks, IoContext) and the figures in docs/workerd-notes.md stay valid; a
# new version must be checked against those notes before the pin moves.
# CHURN_WORKERD_CACHE overrides the cache directory (default build/cache/workerd).
set -eu
cd "$(dirname "$0")/../.."

VERSION=1.20261117.1
CACHE=${CHURN_WORKERD_CACHE:-build/cache/workerd}
BIN=$CACHE/node_modules/@cloudflare/workerd-linux-64/bin/workerd

die() {
    echo "workerd install: $*" >&2
    exit 1
}

# The pinned version reports its release date: a cached binary of another version is replaced.
if [ -x "$BIN" ] && [ "$(cat "$CACHE/.version" 2>/dev/null)" = "$VERSION" ] &&
    "$BIN" --version >/dev/null 2>&1; then
    echo "$(cd "$(dirname "$BIN")" && pwd)/workerd"
    exit 0
fi

. test/npm.sh
need_npm "workerd@$VERSION"

mkdir -p "$CACHE"
log=$CACHE/npm-install.log
rm -f "$CACHE/.version"
# --prefix without a package.json installs into $CACHE/node_modules without touching the repo.
# The platform binary comes in the optional dependency @cloudflare/workerd-linux-64 and needs
# no install script.
npm_run "$log" "workerd@$VERSION" install --prefix "$CACHE" --no-save --no-audit --no-fund \
    --no-package-lock --ignore-scripts "workerd@$VERSION"

[ -x "$BIN" ] || die "npm installed workerd@$VERSION but $BIN is missing (not linux x86_64?)"
"$BIN" --version >/dev/null 2>&1 || die "$BIN does not run on this machine: $("$BIN" --version 2>&1 | tail -n 1)"
echo "$VERSION" >"$CACHE/.version"
echo "$(cd "$(dirname "$BIN")" && pwd)/workerd"
