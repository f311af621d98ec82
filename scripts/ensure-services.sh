#!/usr/bin/env bash
# Make sure a Redis server and an MQTT broker answer at bonusd's configured URLs.
#
# Usage:
#   scripts/ensure-services.sh [start] [--with-chromium]
#   scripts/ensure-services.sh stop
#
# start (the default), for each of Redis and MQTT:
#   * if something answers at the URL (Redis: PING -> PONG; MQTT: a CONNECT is
#     accepted), reuse it as it is;
#   * otherwise, if the URL's host is loopback, start a dev instance on that
#     host and port under .run/ (pid file, log, data). Missing Debian packages
#     are installed first when running as root (redis-server; mosquitto +
#     mosquitto-clients; as root also libjemalloc2, the daemon's allocator); when not root, the exact apt-get command is printed
#     and the script exits non-zero;
#   * a URL on another host that does not answer is an error (nothing to start).
#   Prints one line per service: "reused URL" or "started URL".
#   --with-chromium also makes sure Debian's `chromium` is installed (for the
#   browser tests); --with-test-tools that the mosquitto, mosquitto_pub and
#   redis-server binaries are (the tests and benchmarks start their own), and
#   nginx, systemd-analyze and promtool (Debian's nginx, systemd and prometheus;
#   tests/deploy/ runs them on spare ports; the services their packages start on
#   a systemd host are stopped and disabled right after the install), and pdftoppm
#   (poppler-utils: the kiosk's printed receipt in tests/browser/).
#
# stop: stops the dev instances that this script started (the pid files under
#   .run/). Services it only reused are never touched.
#
# Environment:
#   BONUSD_REDIS_URL   default redis://127.0.0.1:6379/0
#   BONUSD_MQTT_URL    default mqtt://127.0.0.1:1883
#   BONUSD_SERVICE_START_TIMEOUT   seconds to wait for a started service (default 20)
#
# The dev Mosquitto uses deploy/mosquitto/bonusd.conf (see the README there):
#   .run/mosquitto/{mosquitto.conf,conf.d/,data/,mosquitto.log,mosquitto.pid}
# The dev Redis:  redis-server --daemonize yes --bind 127.0.0.1 --port P
#   --dir .run/redis --appendonly yes  (+ pid file and log in .run/redis/)
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

REDIS_URL=${BONUSD_REDIS_URL:-redis://127.0.0.1:6379/0}
MQTT_URL=${BONUSD_MQTT_URL:-mqtt://127.0.0.1:1883}
START_TIMEOUT=${BONUSD_SERVICE_START_TIMEOUT:-20}
PROBE_TIMEOUT=3
RUN="$ROOT/.run"
REDIS_DIR="$RUN/redis"
MQTT_DIR="$RUN/mosquitto"
BROKER_POLICY="$ROOT/deploy/mosquitto/bonusd.conf"

usage() {
    # The header comment, minus the shebang and the '# ' prefixes.
    awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"
}

# =============================================================================
# URLs
# =============================================================================

url_decode() {
    local s=${1//+/ }
    printf '%b' "${s//%/\\x}"
}

# parse_url URL -> sets U_SCHEME U_USER U_PASS U_HOST U_PORT (default port by scheme)
parse_url() {
    local url=$1 default_port
    local re='^([A-Za-z][A-Za-z0-9+.-]*)://(([^:@/]*)(:([^@/]*))?@)?(\[[^]/]+\]|[^:/?#]*)(:([0-9]+))?([/?#].*)?$'
    [[ $url =~ $re ]] || die "cannot parse URL '$(mask_url "$url")'"
    U_SCHEME=${BASH_REMATCH[1],,}
    U_USER=$(url_decode "${BASH_REMATCH[3]}")
    U_PASS=$(url_decode "${BASH_REMATCH[5]}")
    U_HOST=${BASH_REMATCH[6]}
    U_HOST=${U_HOST#[}
    U_HOST=${U_HOST%]}
    case "$U_SCHEME" in
        redis | rediss) default_port=6379 ;;
        mqtts | ssl) default_port=8883 ;;
        *) default_port=1883 ;;
    esac
    U_PORT=${BASH_REMATCH[8]:-$default_port}
    [ -n "$U_HOST" ] || die "URL '$(mask_url "$url")' has no host"
}

# The URL with its password replaced by ***, for printing.
mask_url() {
    # shellcheck disable=SC2001
    printf '%s' "$1" | sed 's#^\([A-Za-z][A-Za-z0-9+.-]*://[^:@/]*\):[^@/]*@#\1:***@#'
}

is_loopback() {
    case "$1" in
        localhost | 127.* | ::1) return 0 ;;
        *) return 1 ;;
    esac
}

# The address a dev instance binds to for a loopback URL host.
bind_address() {
    case "$1" in
        localhost) echo 127.0.0.1 ;;
        *) echo "$1" ;;
    esac
}

# =============================================================================
# Probes: 0 = answers properly, 1 = nothing answers, 2 = answers with an error
# (PROBE_DETAIL holds the reply for messages).
# =============================================================================

PROBE_DETAIL=""

# Plain TCP connect (for TLS URLs, where a handshake is out of scope).
tcp_open() {
    # shellcheck disable=SC2016 # $0/$1 are expanded by the inner bash
    timeout "$PROBE_TIMEOUT" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null
}

# RESP PING over bash's /dev/tcp, for machines without redis-cli.
# Args: host port user pass. Prints the reply line.
# shellcheck disable=SC2016 # the '$' in RESP bulk-string headers is literal
redis_raw_ping() {
    local host=$1 port=$2 user=$3 pass=$4 reply
    local LC_ALL=C # ${#var} counts bytes, as RESP lengths do
    exec 3<>"/dev/tcp/$host/$port" || return 1
    if [ -n "$pass" ]; then
        if [ -n "$user" ]; then
            printf '*3\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n' \
                "${#user}" "$user" "${#pass}" "$pass" >&3
        else
            printf '*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n' "${#pass}" "$pass" >&3
        fi
        IFS= read -r reply <&3 || return 1
        reply=${reply%$'\r'}
        if [ "$reply" != "+OK" ]; then
            printf '%s\n' "$reply"
            return 0
        fi
    fi
    printf '*1\r\n$4\r\nPING\r\n' >&3
    IFS= read -r reply <&3 || return 1
    printf '%s\n' "${reply%$'\r'}"
}

probe_redis() {
    local url=$1 out rc=0 cli
    if [[ $url == unix://* ]]; then
        U_SCHEME=unix U_HOST="" U_PORT=""
        cli=$(find_bin redis-cli) || die "redis-cli is needed to probe $url"
        out=$(timeout "$PROBE_TIMEOUT" "$cli" -s "${url#unix://}" ping 2>&1) || rc=$?
    else
        parse_url "$url"
    fi
    if [ "$U_SCHEME" = unix ]; then
        :
    elif cli=$(find_bin redis-cli); then
        # Not `-u URL`: redis-cli 7 turns redis://:pass@host into AUTH "" pass.
        local opts=(-h "$U_HOST" -p "$U_PORT")
        [ "$U_SCHEME" = rediss ] && opts+=(--tls)
        [ -n "$U_USER" ] && opts+=(--user "$U_USER")
        local auth_env=()
        [ -n "$U_PASS" ] && auth_env=("REDISCLI_AUTH=$U_PASS") # not on the command line
        out=$(env "${auth_env[@]}" timeout "$PROBE_TIMEOUT" "$cli" "${opts[@]}" ping 2>&1) || rc=$?
    elif [ "$U_SCHEME" = redis ]; then
        out=$(timeout "$PROBE_TIMEOUT" bash -c "$(declare -f redis_raw_ping); redis_raw_ping \"\$@\"" \
            _ "$U_HOST" "$U_PORT" "$U_USER" "$U_PASS" 2>/dev/null) || rc=$?
        out=${out#+}
    else
        # rediss:// without redis-cli: a TCP connect is all we can check.
        tcp_open "$U_HOST" "$U_PORT"
        return
    fi
    PROBE_DETAIL=$out
    if [ "$out" = PONG ]; then
        return 0
    fi
    if [ "$rc" -ne 0 ] || [ -z "$out" ] || [[ $out == *"Could not connect"* ]] ||
        [[ $out == *"Connection refused"* ]]; then
        return 1
    fi
    return 2
}

# An MQTT 3.1.1 CONNECT over bash's /dev/tcp, for machines without
# mosquitto_sub. Args: host port user pass. Prints the CONNACK return code
# (0 = accepted) or nothing.
mqtt_raw_connect() {
    local host=$1 port=$2 user=$3 pass=$4
    local -a body=()
    local flags=2 s i n x
    local LC_ALL=C # work on bytes, not characters
    # Appends a 2-byte length and the string's bytes to body.
    mqtt_str() {
        s=$1
        body+=($((${#s} >> 8)) $((${#s} & 255)))
        for ((i = 0; i < ${#s}; i++)); do
            body+=($(($(printf '%d' "'${s:i:1}") & 255)))
        done
    }
    [ -n "$user" ] && flags=$((flags | 128))
    [ -n "$pass" ] && flags=$((flags | 64))
    mqtt_str MQTT
    body+=(4 "$flags" 0 10) # protocol level 4 (3.1.1), flags, keepalive 10 s
    mqtt_str "bonusd-probe-$$"
    [ -n "$user" ] && mqtt_str "$user"
    [ -n "$pass" ] && mqtt_str "$pass"
    # fixed header: CONNECT + remaining length (variable-length integer)
    local -a packet=(16)
    n=${#body[@]}
    while :; do
        x=$((n % 128))
        n=$((n / 128))
        [ "$n" -gt 0 ] && x=$((x | 128))
        packet+=("$x")
        [ "$n" -gt 0 ] || break
    done
    packet+=("${body[@]}")
    local fmt=""
    for x in "${packet[@]}"; do fmt+=$(printf '\\x%02x' "$x"); done
    exec 3<>"/dev/tcp/$host/$port" || return 1
    # shellcheck disable=SC2059
    printf "$fmt" >&3
    # CONNACK: 0x20 0x02 <session-present> <return code>
    local reply
    reply=$(od -An -tx1 -N4 <&3 | tr -d ' \n')
    case "$reply" in
        2002??00) echo 0 ;;
        2002????) echo "$((16#${reply:6:2}))" ;;
        *) return 1 ;;
    esac
    printf '\xe0\x00' >&3 # DISCONNECT
}

probe_mqtt() {
    local url=$1 out rc=0 sub
    parse_url "$url"
    case "$U_SCHEME" in
        mqtt | tcp | mqtts | ssl) ;;
        *) die "BONUSD_MQTT_URL must be mqtt://host:port or mqtts://host:port, got '$(mask_url "$url")'" ;;
    esac
    if [ "$U_SCHEME" = mqtts ] || [ "$U_SCHEME" = ssl ]; then
        # TLS brokers are not started here; a TCP connect is the check.
        tcp_open "$U_HOST" "$U_PORT"
        return
    fi
    if sub=$(find_bin mosquitto_sub); then
        local auth=()
        [ -n "$U_USER" ] && auth+=(-u "$U_USER")
        [ -n "$U_PASS" ] && auth+=(-P "$U_PASS")
        # -E: exit as soon as the subscription is acknowledged (0 = broker answered).
        out=$(timeout "$PROBE_TIMEOUT" "$sub" -h "$U_HOST" -p "$U_PORT" "${auth[@]}" \
            -i "bonusd-probe-$$" -t 'bonusd/probe' -E -W "$PROBE_TIMEOUT" 2>&1) || rc=$?
        PROBE_DETAIL=$out
        [ "$rc" -eq 0 ] && return 0
        if [[ $out == *"not authori"* ]] || [[ $out == *"identifier rejected"* ]] ||
            [[ $out == *"bad user name or password"* ]]; then
            return 2
        fi
        return 1
    fi
    out=$(timeout "$PROBE_TIMEOUT" bash -c "$(declare -f mqtt_raw_connect); mqtt_raw_connect \"\$@\"" \
        _ "$U_HOST" "$U_PORT" "$U_USER" "$U_PASS" 2>/dev/null) || rc=$?
    PROBE_DETAIL="CONNACK return code ${out:-none}"
    [ "$rc" -eq 0 ] && [ "$out" = 0 ] && return 0
    [ "$rc" -eq 0 ] && [ -n "$out" ] && return 2
    return 1
}

# =============================================================================
# Dev instances started by this script (.run/<service>/)
# =============================================================================

# own_pid NAME DIR -> prints the pid of our live instance, or fails.
own_pid() {
    local name=$1 dir=$2 pid comm
    pid=$(cat "$dir/$name.pid" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    comm=$(ps -p "$pid" -o comm= 2>/dev/null) || return 1
    case "$comm" in
        "$name"*) printf '%s\n' "$pid" ;;
        *) return 1 ;; # pid reused by something else: not ours
    esac
}

own_port() { cat "$1/port" 2>/dev/null || true; }

# wait_until_answers PROBE URL NAME DIR LOG
wait_until_answers() {
    local probe=$1 url=$2 name=$3 dir=$4 log=$5 deadline rc
    deadline=$((SECONDS + START_TIMEOUT))
    while :; do
        rc=0
        "$probe" "$url" || rc=$?
        [ "$rc" -eq 0 ] && return 0
        if ! own_pid "$name" "$dir" >/dev/null && [ $((SECONDS + START_TIMEOUT - deadline)) -ge 2 ]; then
            die "$name exited right after starting; see $log:"$'\n'"$(tail -n 15 "$log" 2>/dev/null)"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            die "$name did not answer at $(mask_url "$url") within ${START_TIMEOUT}s; see $log"
        fi
        sleep 0.2
    done
}

start_redis() {
    local url=$1 bin
    parse_url "$url"
    bin=$(find_bin redis-server) || die "redis-server not found"
    mkdir -p "$REDIS_DIR"
    local args=(--daemonize yes --bind "$(bind_address "$U_HOST")" --port "$U_PORT"
        --dir "$REDIS_DIR" --appendonly yes
        --pidfile "$REDIS_DIR/redis-server.pid" --logfile "$REDIS_DIR/redis-server.log")
    [ -n "$U_PASS" ] && args+=(--requirepass "$U_PASS")
    # 9>&-: the daemon must not inherit (and so hold forever) our lock fd.
    "$bin" "${args[@]}" >>"$REDIS_DIR/redis-server.log" 2>&1 9>&- ||
        die "redis-server failed to start; see $REDIS_DIR/redis-server.log"
    printf '%s\n' "$U_PORT" >"$REDIS_DIR/port"
    wait_until_answers probe_redis "$url" redis-server "$REDIS_DIR" "$REDIS_DIR/redis-server.log"
}

start_mosquitto() {
    local url=$1 bin
    parse_url "$url"
    bin=$(find_bin mosquitto) || die "mosquitto not found"
    [ -f "$BROKER_POLICY" ] || die "$BROKER_POLICY is missing"
    mkdir -p "$MQTT_DIR/conf.d" "$MQTT_DIR/data"
    # A directory holding only our policy (include_dir loads every *.conf).
    ln -sfn "$BROKER_POLICY" "$MQTT_DIR/conf.d/bonusd.conf"
    cat >"$MQTT_DIR/mosquitto.conf" <<EOF
# Generated by scripts/ensure-services.sh on every start; edit
# deploy/mosquitto/bonusd.conf instead. Instance settings only:
listener $U_PORT $(bind_address "$U_HOST")
persistence_location $MQTT_DIR/data/
pid_file $MQTT_DIR/mosquitto.pid
log_dest file $MQTT_DIR/mosquitto.log
# Only matters as root: otherwise Mosquitto drops to the 'mosquitto' user,
# which cannot write to this directory.
user $(id -un)
include_dir $MQTT_DIR/conf.d
EOF
    # -d: daemonise. Config errors are reported before it forks.
    "$bin" -c "$MQTT_DIR/mosquitto.conf" -d >>"$MQTT_DIR/mosquitto.log" 2>&1 9>&- ||
        die "mosquitto failed to start; see $MQTT_DIR/mosquitto.log:"$'\n'"$(tail -n 5 "$MQTT_DIR/mosquitto.log")"
    printf '%s\n' "$U_PORT" >"$MQTT_DIR/port"
    wait_until_answers probe_mqtt "$url" mosquitto "$MQTT_DIR" "$MQTT_DIR/mosquitto.log"
}

# stop_instance NAME DIR LABEL
stop_instance() {
    local name=$1 dir=$2 label=$3 pid deadline
    if ! pid=$(own_pid "$name" "$dir"); then
        rm -f "$dir/$name.pid" "$dir/port"
        say "$label: not running (nothing started by this script)"
        return 0
    fi
    kill -TERM "$pid"
    # Both save their data on SIGTERM; a large Mosquitto backlog takes a while.
    deadline=$((SECONDS + 60))
    while kill -0 "$pid" 2>/dev/null; do
        [ "$SECONDS" -lt "$deadline" ] || die "$label (pid $pid) still running 60s after SIGTERM"
        sleep 0.1
    done
    rm -f "$dir/$name.pid" "$dir/port"
    say "$label: stopped (pid $pid)"
}

# =============================================================================
# start / stop
# =============================================================================

# check_service LABEL PROBE URL NAME DIR -> sets CHECK_RESULT to reused|start
check_service() {
    local label=$1 probe=$2 url=$3 name=$4 dir=$5 rc=0 pid port
    "$probe" "$url" || rc=$?
    case "$rc" in
        0)
            CHECK_RESULT=reused
            return 0
            ;;
        2) die "$label at $(mask_url "$url") responds, but not as expected (wrong credentials or not a $label server?): $PROBE_DETAIL" ;;
    esac
    [ "$U_SCHEME" != unix ] ||
        die "nothing answers at $url; a Redis on a unix socket is not started here, start it yourself"
    case "$U_SCHEME" in
        mqtts | ssl | rediss)
            die "nothing answers at $(mask_url "$url"); TLS services are not started here, start it yourself"
            ;;
    esac
    is_loopback "$U_HOST" ||
        die "nothing answers at $(mask_url "$url") and it is not on this machine, so it cannot be started here"
    if pid=$(own_pid "$name" "$dir"); then
        port=$(own_port "$dir")
        if [ "$port" != "$U_PORT" ]; then
            die "the dev $label started by this script (pid $pid) listens on port ${port:-?}," \
                "not $U_PORT; run 'scripts/ensure-services.sh stop' first"
        fi
        die "the dev $label started by this script (pid $pid) does not answer; see $dir/$name.log" \
            "or run 'scripts/ensure-services.sh stop'"
    fi
    CHECK_RESULT=start
}

describe_reused() {
    local label=$1 url=$2 name=$3 dir=$4 pid port=""
    [[ $url == unix://* ]] || { parse_url "$url" && port=$U_PORT; }
    if pid=$(own_pid "$name" "$dir") && [ "$(own_port "$dir")" = "$port" ]; then
        say "$label: reused $(mask_url "$url") (dev instance in ${dir#"$ROOT"/}, pid $pid)"
    elif [ "$label" = mqtt ]; then
        # Not ours, so not configured by deploy/mosquitto/bonusd.conf.
        say "$label: reused $(mask_url "$url") (its own config; bonusd's needs: deploy/mosquitto/README.md)"
    else
        say "$label: reused $(mask_url "$url")"
    fi
}

# stop_tool_services PKG... : nginx and prometheus are installed for their binaries
# (tests/deploy/ starts its own on spare ports); on a systemd host their packages also
# start and enable a service (port 80, port 9090): stop and disable those just installed.
stop_tool_services() {
    local pkg units=()
    [ -d /run/systemd/system ] || return 0
    for pkg in "$@"; do
        case "$pkg" in
            nginx) units+=(nginx.service) ;;
            prometheus) units+=(prometheus.service prometheus-node-exporter.service) ;;
        esac
    done
    [ "${#units[@]}" -gt 0 ] || return 0
    say "systemctl disable --now ${units[*]} (installed for tests/deploy/ only)"
    systemctl disable --now "${units[@]}" >/dev/null 2>&1 || true
}

cmd_start() {
    local with_chromium=$1 with_test_tools=${2:-0} redis_action mqtt_action
    local -a pkgs=()

    take_lock "$RUN/services.lock"

    check_service redis probe_redis "$REDIS_URL" redis-server "$REDIS_DIR"
    redis_action=$CHECK_RESULT
    check_service mqtt probe_mqtt "$MQTT_URL" mosquitto "$MQTT_DIR"
    mqtt_action=$CHECK_RESULT

    if [ "$redis_action" = start ] && ! find_bin redis-server >/dev/null; then
        pkgs+=(redis-server)
    fi
    if [ "$mqtt_action" = start ]; then
        if ! find_bin mosquitto >/dev/null; then
            pkgs+=(mosquitto mosquitto-clients)
        elif ! find_bin mosquitto_sub >/dev/null && is_root; then
            pkgs+=(mosquitto-clients) # nice to have (probes, mosquitto_pub in tests)
        fi
    fi
    # the daemon's allocator (BONUSD_ALLOCATOR=jemalloc, bonusd/infra/allocator.py): nice to
    # have, so only installed as root (without it the daemon says so and runs on glibc's)
    if is_root && ! ldconfig -p 2>/dev/null | grep -q 'libjemalloc\.so\.2'; then
        pkgs+=(libjemalloc2)
    fi
    if [ "$with_test_tools" = 1 ]; then
        # the test suite and benchmarks start their own throwaway brokers and Redis servers
        find_bin mosquitto >/dev/null || pkgs+=(mosquitto)
        find_bin mosquitto_pub >/dev/null || pkgs+=(mosquitto-clients)
        find_bin redis-server >/dev/null || pkgs+=(redis-server)
        # tests/deploy/: the reverse proxy, systemd-analyze verify of the units, promtool
        find_bin nginx >/dev/null || pkgs+=(nginx)
        find_bin systemd-analyze >/dev/null || pkgs+=(systemd)
        find_bin promtool >/dev/null || pkgs+=(prometheus)
        # tests/browser/: the kiosk's printed receipt, rasterised from Chromium's PDF
        find_bin pdftoppm >/dev/null || pkgs+=(poppler-utils)
        if [ "${#pkgs[@]}" -gt 0 ]; then
            mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
        fi
    fi
    if [ "${#pkgs[@]}" -gt 0 ]; then
        is_root || die "missing Debian packages. Run:"$'\n'"    sudo apt-get install -y ${pkgs[*]}"$'\n'"then rerun $0"
        apt_install "${pkgs[@]}"
        stop_tool_services "${pkgs[@]}"
        # Debian's packages may have started their own service on the port.
        if [ "$redis_action" = start ]; then
            check_service redis probe_redis "$REDIS_URL" redis-server "$REDIS_DIR"
            redis_action=$CHECK_RESULT
        fi
        if [ "$mqtt_action" = start ]; then
            check_service mqtt probe_mqtt "$MQTT_URL" mosquitto "$MQTT_DIR"
            mqtt_action=$CHECK_RESULT
        fi
    fi

    if [ "$redis_action" = start ]; then
        start_redis "$REDIS_URL"
        say "redis: started $(mask_url "$REDIS_URL") (pid $(own_pid redis-server "$REDIS_DIR"), data and log in .run/redis/)"
    else
        describe_reused redis "$REDIS_URL" redis-server "$REDIS_DIR"
    fi
    if [ "$mqtt_action" = start ]; then
        start_mosquitto "$MQTT_URL"
        say "mqtt: started $(mask_url "$MQTT_URL") (pid $(own_pid mosquitto "$MQTT_DIR"), deploy/mosquitto/bonusd.conf, data and log in .run/mosquitto/)"
    else
        describe_reused mqtt "$MQTT_URL" mosquitto "$MQTT_DIR"
    fi

    if [ "$with_chromium" = 1 ]; then
        local chromium
        if chromium=$(find_bin chromium); then
            say "chromium: present $chromium"
        elif is_root; then
            apt_install chromium
            chromium=$(find_bin chromium) || die "chromium still not found after apt-get install"
            say "chromium: installed $chromium"
        else
            die "chromium is not installed. Run:"$'\n'"    sudo apt-get install -y chromium"
        fi
    fi
}

cmd_stop() {
    take_lock "$RUN/services.lock"
    stop_instance redis-server "$REDIS_DIR" redis
    stop_instance mosquitto "$MQTT_DIR" mqtt
}

main() {
    local cmd=start with_chromium=0 with_test_tools=0 arg
    for arg in "$@"; do
        case "$arg" in
            start | stop) cmd=$arg ;;
            --with-chromium) with_chromium=1 ;;
            --with-test-tools) with_test_tools=1 ;;
            -h | --help)
                usage
                exit 0
                ;;
            *) die "unknown argument '$arg' (try --help)" ;;
        esac
    done
    case "$cmd" in
        start) cmd_start "$with_chromium" "$with_test_tools" ;;
        stop) cmd_stop ;;
    esac
}

main "$@"
