# Sourced by the install scripts of the real components the tests fetch from the npm registry
# (test/bun, test/node, test/workerd, test/xsnap, test/astgrep, test/biome, test/deno), from
# the repository root.  Each sets
# COMPONENT (its name in messages), VERSION (the pin), CACHE (the directory reused between
# runs) and BIN (the binary in it), defines bin_ok (true when "$BIN" runs as the pinned
# version) and then reads:
#
#     npm_cached                    the cached binary's path, and exit, when it is the pin
#     npm_install PACKAGE           or npm_pack PACKAGE (then unpack it): fetch into CACHE
#     npm_done                      check the binary, record its version, print its path
#
# A cached binary of another version, or one that does not run, is fetched again.

die() {
    echo "$COMPONENT install: $*" >&2
    exit 1
}

npm_print_bin() {
    echo "$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
}

npm_cached() {
    if [ -x "$BIN" ] && [ "$(cat "$CACHE/.version" 2>/dev/null)" = "$VERSION" ] && bin_ok; then
        npm_print_bin
        exit 0
    fi
}

# need_npm PACKAGE: npm on PATH, Debian's installed when we are root and it is missing.  A
# machine with another Node.js distribution has its own npm, which Debian's package would
# conflict with, so install only when the command is missing.
need_npm() {
    if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "installing Debian's npm to fetch $1" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >&2 || true
    fi
    command -v npm >/dev/null 2>&1 ||
        die "npm is not installed; run: sudo apt-get install -y npm (it is needed to fetch $1)"
}

# npm_run LOG PACKAGE NPM-ARGS...: runs npm (at most 10 minutes) with its output in LOG; on
# failure dies with one line that says whether the registry could not be reached.
npm_run() {
    log=$1 package=$2
    shift 2
    timeout 600 npm "$@" >"$log" 2>&1 && return 0
    why=$(grep -m1 -iE 'npm (error|ERR)' "$log" || tail -n 1 "$log")
    if grep -qiE 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network|socket hang up|proxy' "$log"; then
        die "npm cannot reach the npm registry to fetch $package (network error, see $log): $why"
    fi
    die "npm $1 $package failed (see $log): $why"
}

# npm_install PACKAGE: PACKAGE@VERSION and its dependencies into $CACHE/node_modules (--prefix
# without a package.json leaves the repository alone), without install scripts: the binaries
# fetched this way need none.
npm_install() {
    need_npm "$1@$VERSION"
    mkdir -p "$CACHE"
    rm -f "$CACHE/.version"
    npm_run "$CACHE/npm-install.log" "$1@$VERSION" install --prefix "$CACHE" --no-save \
        --no-audit --no-fund --no-package-lock --ignore-scripts "$1@$VERSION"
}

# npm_pack PACKAGE: only PACKAGE@VERSION's tarball (checked against the registry's integrity
# hash), into $CACHE with what an earlier fetch unpacked there removed; prints its path.
npm_pack() {
    need_npm "$1@$VERSION"
    mkdir -p "$CACHE"
    rm -rf "$CACHE/.version" "$CACHE/package" "$CACHE"/*.tgz
    npm_run "$CACHE/install.log" "$1@$VERSION" pack --pack-destination "$CACHE" "$1@$VERSION"
    tgz=$(ls "$CACHE"/*.tgz 2>/dev/null) || die "npm pack $1@$VERSION left no tarball in $CACHE"
    echo "$tgz"
}

npm_done() {
    [ -x "$BIN" ] || die "$COMPONENT $VERSION is fetched but $BIN is missing (not linux x86_64?)"
    bin_ok || die "$BIN does not run as $COMPONENT $VERSION on this machine: $(bin_version 2>&1 | tail -n 1)"
    echo "$VERSION" >"$CACHE/.version"
    npm_print_bin
}
