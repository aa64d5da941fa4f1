#!/bin/sh
# Installs Biome (a Rust command-line tool from the npm registry whose stripped executable
# carries jemalloc: its strings name jemalloc, its symbol tables keep none of its functions)
# into a cache directory reused between test runs, and prints the path of the binary.  The
# version is pinned so the behaviour test/t_rust_cli.sh checks stays the same.
# CHURN_BIOME_CACHE overrides the cache directory (default build/cache/biome).
set -eu
cd "$(dirname "$0")/../.."

COMPONENT=biome
VERSION=2.6.8
PACKAGE=@biomejs/cli-linux-x64
CACHE=${CHURN_BIOME_CACHE:-build/cache/biome}
BIN=$CACHE/node_modules/$PACKAGE/biome
bin_version() { "$BIN" --version; }
bin_ok() { [ "$(bin_version 2>/dev/null)" = "Version: $VERSION" ]; }

. test/npm.sh
npm_cached
# The platform package holds the binary itself.
npm_install "$PACKAGE"
npm_done
