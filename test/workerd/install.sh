#!/bin/sh
# Installs Cloudflare's workerd from the npm registry into a cache directory reused between test
# runs, and prints the path of the binary.  The version is pinned so that the symbols the shim
# looks up (tcmalloc hooks, IoContext) and the figures in docs/workerd-notes.md stay valid; a
# new version must be checked against those notes before the pin moves.
# CHURN_WORKERD_CACHE overrides the cache directory (default build/cache/workerd).
set -eu
cd "$(dirname "$0")/../.."

COMPONENT=workerd
VERSION=1.20261117.1
CACHE=${CHURN_WORKERD_CACHE:-build/cache/workerd}
# The platform binary comes in the optional dependency @cloudflare/workerd-linux-64.
BIN=$CACHE/node_modules/@cloudflare/workerd-linux-64/bin/workerd
bin_version() { "$BIN" --version; }
# The pinned version reports its release date; the cache's .version names the pin.
bin_ok() { bin_version >/dev/null 2>&1; }

. test/npm.sh
npm_cached
npm_install workerd
npm_done
