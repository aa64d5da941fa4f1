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

COMPONENT=xsnap
VERSION=0.15.0
CACHE=${CHURN_XSNAP_CACHE:-build/cache/xsnap}
SRC=$CACHE/package
BIN=$SRC/xsnap-native/xsnap/build/bin/lin/release/xsnap-worker
bin_version() { "$BIN" -v; }
bin_ok() { bin_version 2>/dev/null | grep -q "^xsnap $VERSION "; }

. test/npm.sh
npm_cached
for tool in make cc tar; do
    command -v $tool >/dev/null 2>&1 || die "$tool is missing; run: sudo apt-get install -y build-essential"
done
tgz=$(npm_pack @agoric/xsnap)
tar -xzf "$tgz" -C "$CACHE" || die "cannot unpack $tgz"

# The variables src/build.js passes to make (XSNAP_VERSION, CC with __has_builtin, which
# xsnap-worker.c insists on so that snapshots agree across compilers).
log=$CACHE/install.log
moddable=$(cd "$SRC/moddable" && pwd)
if ! make -C "$SRC/xsnap-native/xsnap/makefiles/lin" -f xsnap-worker.mk -j"$(nproc)" \
    MODDABLE="$moddable" GOAL=release XSNAP_VERSION="$VERSION" \
    CC='cc -g "-D__has_builtin(x)=1"' >>"$log" 2>&1; then
    die "building xsnap-worker $VERSION failed (see $log): $(grep -m1 -E 'error|Error' "$log" || tail -n 1 "$log")"
fi
npm_done
