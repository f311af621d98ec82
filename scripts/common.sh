# shellcheck shell=bash
# Helpers shared by scripts/bootstrap.sh and scripts/ensure-services.sh.
# Source it; it defines functions and ROOT and does nothing else.

# The project root: the parent of this scripts/ directory.
# shellcheck disable=SC2034 # used by the scripts that source this file
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Prefix every line with the script name so `make` output shows who spoke.
_PROG="$(basename "${0%.sh}")"

say() { printf '%s: %s\n' "$_PROG" "$*"; }
warn() { printf '%s: warning: %s\n' "$_PROG" "$*" >&2; }
die() {
    printf '%s: error: %s\n' "$_PROG" "$*" >&2
    exit 1
}

is_root() { [ "$(id -u)" -eq 0 ]; }

# Find a program on PATH, then in the sbin directories: Debian puts
# /usr/sbin/mosquitto there, and those are often not on a non-root PATH.
find_bin() {
    local name=$1 dir
    if command -v "$name" >/dev/null 2>&1; then
        command -v "$name"
        return 0
    fi
    for dir in /usr/sbin /usr/local/sbin /sbin; do
        if [ -x "$dir/$name" ]; then
            printf '%s\n' "$dir/$name"
            return 0
        fi
    done
    return 1
}

# apt_install PKG... : install Debian packages (caller checks is_root first).
# Runs `apt-get update` at most once per script run.
_APT_UPDATED=0
apt_install() {
    command -v apt-get >/dev/null 2>&1 ||
        die "cannot install $* automatically: apt-get not found (not Debian?). Install: $*"
    if [ "$_APT_UPDATED" -eq 0 ]; then
        say "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq 9>&- ||
            die "apt-get update failed"
        _APT_UPDATED=1
    fi
    say "apt-get install -y $*"
    # 9>&-: services the packages start must not inherit take_lock's fd.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 9>&- ||
        die "apt-get install -y $* failed"
}

# Serialise concurrent runs of a script (e.g. `make test` and `make demo` in two
# terminals) on a lock file held on fd 9; a no-op when flock(1) is missing.
# Long-lived children (daemons) must be started with 9>&-, or they would hold
# the lock after we exit.
take_lock() {
    local lockfile=$1
    command -v flock >/dev/null 2>&1 || return 0
    mkdir -p "$(dirname "$lockfile")"
    exec 9>"$lockfile"
    if ! flock -n 9; then
        say "waiting for another run to finish (lock $lockfile)"
        flock 9
    fi
}
