#!/bin/sh
# Installs the Debian packages named in $CHURN_PACKAGES that are missing, when run as root;
# otherwise prints the exact apt-get line to run and fails.  Used by the Makefile so that
# `make demo` and `make check` work on a fresh Debian 12 with only gcc and make.
set -eu
missing=""
for p in $CHURN_PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "libchurn: missing Debian packages; run: sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "libchurn: installing missing Debian packages:$missing" >&2
# A parallel make (or another apt run) may hold dpkg's lock: wait for it rather than fail.
lock="-o DPkg::Lock::Timeout=900"
apt-get $lock update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get $lock install -y -qq $missing >&2
