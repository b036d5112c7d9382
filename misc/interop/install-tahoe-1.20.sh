#!/bin/sh
# Install the real Tahoe-LAFS 1.20.0 from PyPI into a virtualenv OUTSIDE the
# clone, for the interoperability tests (tests/interop/), and print the
# absolute path of its `tahoe` executable on stdout (last line).
#
#   sh misc/interop/install-tahoe-1.20.sh            # install if needed, print path
#   sh misc/interop/install-tahoe-1.20.sh --force    # reinstall
#
# Where:  ${XDG_CACHE_HOME:-~/.cache}/tahoe-lafs-py/tahoe-1.20.0
#         (override with TAHOE120_VENV), so fresh clones on this machine reuse it.
# Python: $PYTHON (default python3.11), the machine's interpreter.
#
# The venv counts as installed only when its marker file exists and names the
# same pins; the marker is written last, after `tahoe --version` printed
# tahoe-lafs/1.20.0.  A lock file serialises concurrent installers (two pytest
# processes, or make and pytest): the second waits, then finds it installed.
# tests/support/tahoe120.py runs this script; the pins live only here.
set -eu

TAHOE_VERSION=1.20.0
# Dependencies pinned to versions known to work with tahoe-lafs 1.20.0 on
# Python 3.11 here; everything else is left to pip (the resolved set is saved
# in $VENV/pip-freeze.txt).
PINS="tahoe-lafs==$TAHOE_VERSION Twisted==26.10.0 foolscap==24.9.0 cryptography==50.0.2 pyOpenSSL==26.4.0"

PYTHON="${PYTHON:-python3.11}"
ROOT="${XDG_CACHE_HOME:-${HOME:?HOME is not set}/.cache}/tahoe-lafs-py"
VENV="${TAHOE120_VENV:-$ROOT/tahoe-$TAHOE_VERSION}"
MARKER="$VENV/.tahoe-installed"
LOCK="$VENV.lock"
TAHOE="$VENV/bin/tahoe"

force=no
case "${1:-}" in
    --force) force=yes ;;
    "") ;;
    *) echo "usage: $0 [--force]" >&2; exit 2 ;;
esac

say() { echo "install-tahoe-1.20: $*" >&2; }

is_installed() {
    [ -x "$TAHOE" ] && [ -f "$MARKER" ] \
        && [ "$(sed -n 1p "$MARKER")" = "pins: $PINS" ] \
        && "$VENV/bin/python" -c "" 2>/dev/null
}

if [ "$force" = no ] && is_installed; then
    echo "$TAHOE"
    exit 0
fi

mkdir -p "$(dirname "$VENV")"

# Take the lock (held until this script exits).  flock(1) is in util-linux;
# without it, re-run this script under a Python that holds the lock for us.
if [ -z "${TAHOE120_LOCK_HELD:-}" ]; then
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$LOCK"
        flock 9
    else
        export TAHOE120_LOCK_HELD=1
        exec "$PYTHON" -c '
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.set_inheritable(fd, True)
os.execvp("sh", ["sh"] + sys.argv[2:])
' "$LOCK" "$0" "$@"
    fi
fi

# Someone else may have finished the install while we waited for the lock.
if [ "$force" = no ] && is_installed; then
    echo "$TAHOE"
    exit 0
fi

if ! command -v "$PYTHON" >/dev/null 2>&1; then
    say "cannot find $PYTHON (set PYTHON=/path/to/python3.11)"
    exit 1
fi

start=$(date +%s)
say "installing tahoe-lafs $TAHOE_VERSION into $VENV (about a minute)"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input $PINS >&2
"$VENV/bin/python" -m pip freeze --disable-pip-version-check > "$VENV/pip-freeze.txt"

version=$("$TAHOE" --version)
if [ "$version" != "tahoe-lafs/$TAHOE_VERSION" ]; then
    say "unexpected 'tahoe --version' output: $version"
    exit 1
fi

printf 'pins: %s\n%s\n' "$PINS" "$version" > "$MARKER.tmp"
mv "$MARKER.tmp" "$MARKER"
say "installed in $(( $(date +%s) - start )) s"
echo "$TAHOE"
