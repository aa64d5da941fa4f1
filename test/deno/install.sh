#!/bin/sh
# Installs deno (a JavaScript runtime whose stripped executable carries V8: no symbol table,
# only V8's own messages among its bytes) from the npm registry into a cache directory reused
# between test runs, and prints the path of the binary.  The version is pinned so the
# behaviour test/t_deno.sh checks stays the same; a new version must be checked against it.
# CHURN_DENO_CACHE overrides the cache directory (default build/cache/deno).
set -eu
cd "$(dirname "$0")/../.."

COMPONENT=deno
VERSION=2.9.6
PACKAGE=@deno/linux-x64-glibc
CACHE=${CHURN_DENO_CACHE:-build/cache/deno}
BIN=$CACHE/node_modules/$PACKAGE/deno
bin_version() { "$BIN" --version | head -n 1 | cut -d ' ' -f 1-2; }
bin_ok() { [ "$(bin_version 2>/dev/null)" = "deno $VERSION" ]; }

. test/npm.sh
npm_cached
# The platform package holds the binary itself.
npm_install "$PACKAGE"
npm_done
