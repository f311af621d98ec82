#!/usr/bin/env bash
# Set up the Python side of bonusd on a fresh Debian machine, idempotently:
#
#   1. python3 >= 3.11 must exist (as root on Debian: installed if missing);
#   2. `python3 -m venv` must work (as root: apt-get install python3-venv;
#      otherwise the exact command to run is printed);
#   3. .venv is created if missing (or recreated if broken);
#   4. `pip install -e '.[dev]'` runs only when pyproject.toml (or the venv's
#      Python) changed since the last successful install, tracked by a stamp
#      file in .venv.
#
# Silent when there is nothing to do. Used by `make setup` (and hence
# `make test`, `make demo`, ...).
#
# Environment:
#   PYTHON   interpreter to build the venv from (default: python3)
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

MIN_MAJOR=3
MIN_MINOR=11
PYTHON=${PYTHON:-python3}
VENV="$ROOT/.venv"
STAMP="$VENV/.bonusd-bootstrap-stamp"

usage() {
    # The header comment, minus the shebang and the '# ' prefixes.
    awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"
}

case "${1:-}" in
    -h | --help)
        usage
        exit 0
        ;;
    "") ;;
    *) die "unknown argument '$1' (try --help)" ;;
esac

# Prints "X.Y" and succeeds if $1 is a Python >= MIN_MAJOR.MIN_MINOR.
python_ok() {
    "$1" -c "import sys; print('%d.%d' % sys.version_info[:2]); \
sys.exit(0 if sys.version_info >= ($MIN_MAJOR, $MIN_MINOR) else 1)" 2>/dev/null
}

# --- 1. python3 >= 3.11 ------------------------------------------------------
if ! command -v "$PYTHON" >/dev/null 2>&1; then
    if [ "$PYTHON" = python3 ] && is_root && command -v apt-get >/dev/null 2>&1; then
        apt_install python3 python3-venv
    else
        die "$PYTHON not found; bonusd needs Python >= $MIN_MAJOR.$MIN_MINOR." \
            "On Debian 12+: sudo apt-get install -y python3 python3-venv"
    fi
fi
if ! py_version=$(python_ok "$PYTHON"); then
    die "bonusd needs Python >= $MIN_MAJOR.$MIN_MINOR, but $(command -v "$PYTHON") is" \
        "${py_version:-unusable}. Install a newer one (Debian 12 ships 3.11) and rerun," \
        "or point PYTHON=/path/to/python3.11 at it."
fi

# --- 2 + 3. the virtual environment -----------------------------------------
take_lock "$ROOT/.run/bootstrap.lock"

venv_healthy() {
    [ -x "$VENV/bin/python" ] && python_ok "$VENV/bin/python" >/dev/null
}

ensure_venv_module() {
    # Debian splits `venv` (needs ensurepip) into python3-venv.
    "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1 && return 0
    local pkg=python3-venv
    if is_root; then
        apt_install "$pkg"
        "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1 ||
            die "'$PYTHON -m venv' still does not work after installing $pkg" \
                "($(command -v "$PYTHON") may not be Debian's python3; set PYTHON=/usr/bin/python3)"
    else
        die "'$PYTHON -m venv' is not available. Run: sudo apt-get install -y $pkg"
    fi
}

if ! venv_healthy; then
    if [ -e "$VENV" ]; then
        say "$VENV is broken or older than Python $MIN_MAJOR.$MIN_MINOR; recreating it"
        rm -rf "$VENV"
    fi
    ensure_venv_module
    say "creating $VENV (Python $py_version)"
    "$PYTHON" -m venv "$VENV" || die "'$PYTHON -m venv $VENV' failed"
fi

# --- 4. pip install -e '.[dev]' when pyproject.toml changed -------------------
want_stamp() {
    {
        sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1
        "$VENV/bin/python" -c 'import sys; print(sys.version)'
    } | sha256sum | cut -d' ' -f1
}

[ -f "$ROOT/pyproject.toml" ] || die "$ROOT/pyproject.toml not found"
want=$(want_stamp)
have=$(cat "$STAMP" 2>/dev/null || true)
if [ "$want" != "$have" ]; then
    if [ -z "$have" ]; then
        say "installing bonusd and its dev dependencies into .venv"
    else
        say "pyproject.toml changed: reinstalling bonusd[dev] into .venv"
    fi
    (
        cd "$ROOT"
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[dev]'
    ) || die "pip install -e '.[dev]' failed (see above); the next run will retry"
    printf '%s\n' "$want" >"$STAMP"
fi
