# Sourced by the install scripts of the real components the tests fetch from the npm registry
# (test/workerd, test/node, test/xsnap), each of which defines die().

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
