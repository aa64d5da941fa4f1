#!/bin/sh
# Builds Moddable's XS engine as Agoric's xsnap-worker from the pinned @agoric/xsnap npm tarball
# into a cache directory reused between test runs, and prints the path of the binary.
# Only the tarball is fetched (`npm pack`, checked against the registry's integrity hash): the
# tests drive the worker over its netstring pipes themselves and need none of the package's
# JavaScript dependencies.  The package's own build (src/build.js) runs xsnap-worker.mk for
# the release and the debug goals; the release goal alone is built here, with the same flags
# plus -g, which leaves the code unchanged and gives the analyzer file:line and inlined frames.
# The version is pinned so that the functions the tests name (fxSetCurrentMeter,
# fxAllocateSlots, fxGrowSlots) and the figures in docs/xsnap.md stay valid.
# CHURN_XSNAP_CACHE overrides the cache directory (default build/cache/xsnap).
set -eu
cd "$(dirname "$0")/../.."

VERSION=0.15.0
CACHE=${CHURN_XSNAP_CACHE:-build/cache/xsnap}
SRC=$CACHE/package
BIN=$SRC/xsnap-native/xsnap/build/bin/lin/release/xsnap-worker

die() {
    echo "xsnap install: $*" >&2
    exit 1
}

# The worker prints its own version with -v: a cached binary of another version is rebuilt.
if [ -x "$BIN" ] && [ "$(cat "$CACHE/.version" 2>/dev/null)" = "$VERSION" ] &&
    "$BIN" -v 2>/dev/null | grep -q "^xsnap $VERSION "; then
    echo "$(cd "$(dirname "$BIN")" && pwd)/xsnap-worker"
    exit 0
fi

. test/npm.sh
need_npm "@agoric/xsnap@$VERSION"
for tool in make cc tar; do
    command -v $tool >/dev/null 2>&1 || die "$tool is missing; run: sudo apt-get install -y build-essential"
done

mkdir -p "$CACHE"
log=$CACHE/install.log
rm -rf "$CACHE/.version" "$SRC" "$CACHE"/agoric-xsnap-*.tgz
npm_run "$log" "@agoric/xsnap@$VERSION" pack --pack-destination "$CACHE" "@agoric/xsnap@$VERSION"
tar -xzf "$CACHE/agoric-xsnap-$VERSION.tgz" -C "$CACHE" || die "cannot unpack $CACHE/agoric-xsnap-$VERSION.tgz"

# The variables src/build.js passes to make (XSNAP_VERSION, CC with __has_builtin, which
# xsnap-worker.c insists on so that snapshots agree across compilers).
moddable=$(cd "$SRC/moddable" && pwd)
if ! make -C "$SRC/xsnap-native/xsnap/makefiles/lin" -f xsnap-worker.mk -j"$(nproc)" \
    MODDABLE="$moddable" GOAL=release XSNAP_VERSION="$VERSION" \
    CC='cc -g "-D__has_builtin(x)=1"' >>"$log" 2>&1; then
    die "building xsnap-worker $VERSION failed (see $log): $(grep -m1 -E 'error|Error' "$log" || tail -n 1 "$log")"
fi
[ -x "$BIN" ] || die "make succeeded but $BIN is missing"
"$BIN" -v 2>/dev/null | grep -q "^xsnap $VERSION " ||
    die "$BIN does not report version $VERSION: $("$BIN" -v 2>&1 | tail -n 1)"
echo "$VERSION" >"$CACHE/.version"
echo "$(cd "$(dirname "$BIN")" && pwd)/xsnap-worker"
