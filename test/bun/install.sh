#!/bin/sh
# Installs Bun (a JavaScript runtime that links mimalloc into its executable, with none of
# mimalloc's names left in its symbol table) from the npm registry into a cache directory
# reused between test runs, and prints the path of the binary.  The version is pinned so the
# behaviour test/t_bun.sh checks stays the same; a new version must be checked against it.
# CHURN_BUN_CACHE overrides the cache directory (default build/cache/bun).
set -eu
cd "$(dirname "$0")/../.."

COMPONENT=bun
VERSION=1.4.5
PACKAGE=@oven/bun-linux-x64
CACHE=${CHURN_BUN_CACHE:-build/cache/bun}
BIN=$CACHE/node_modules/$PACKAGE/bin/bun
bin_version() { "$BIN" --version; }
bin_ok() { [ "$(bin_version 2>/dev/null)" = "$VERSION" ]; }

. test/npm.sh
npm_cached
# The platform package holds the binary itself.
npm_install "$PACKAGE"
npm_done
