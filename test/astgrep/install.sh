#!/bin/sh
# Installs ast-grep (a Rust command-line tool whose executable keeps its symbol table, the
# Rust global allocator's shims included, and allocates through glibc's malloc) from the npm
# registry into a cache directory reused between test runs, and prints the path of the binary.
# The version is pinned so the behaviour test/t_rust_cli.sh checks stays the same.
# CHURN_ASTGREP_CACHE overrides the cache directory (default build/cache/ast-grep).
set -eu
cd "$(dirname "$0")/../.."

COMPONENT=ast-grep
VERSION=0.51.1
PACKAGE=@ast-grep/cli-linux-x64-gnu
CACHE=${CHURN_ASTGREP_CACHE:-build/cache/ast-grep}
BIN=$CACHE/node_modules/$PACKAGE/ast-grep
bin_version() { "$BIN" --version; }
bin_ok() { [ "$(bin_version 2>/dev/null)" = "ast-grep $VERSION" ]; }

. test/npm.sh
npm_cached
# The platform package holds the binary itself.
npm_install "$PACKAGE"
npm_done
