"""`bonusd doctor`: a deployment checked from the inside, each finding with its fix.

Run on a daemon's host with the daemon's settings (its env file). Each check reads, never
writes: Redis's persistence, eviction and memory (bonusd/infra/redischeck.py, the same
reading as `bonusd run`'s start check), the broker's limits (bonusd/service/brokercheck.py),
this host's clock against Redis's, the time zone data, the audit archive's disk and last
copy, token and certificate expiries, the promotion files and whether they give the rules
the site runs. Exit status: 0 clean, 1 warnings, 2 problems (docs/operations.md).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import time
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import redis.exceptions
from cryptography import x509
from redis.asyncio import Redis

from bonusd.access.auth import TokenStore
from bonusd.audit.archive import AuditArchive, site_archive
from bonusd.audit.chain import from_jsonl
from bonusd.infra.keys import Keys
from bonusd.infra.redischeck import FIX as REDIS_FIX
from bonusd.infra.redischeck import masked, read_facts
from bonusd.infra.redisclient import REDIS_ERRORS, redis_client
from bonusd.ingest.target import MqttTarget
from bonusd.promotions import PromotionFileError
from bonusd.promotions.rulesync import fingerprint, site_promotions
from bonusd.service.brokercheck import (
    config_findings,
    packet_finding,
    probe_broker,
    read_broker_config,
)
from bonusd.service.doctorreport import CheckStatus, Finding
from bonusd.settings import Settings

GIB = 1024**3
NTP_FIX = "run a time service on every host (timedatectl set-ntp true; chrony or systemd-timesyncd)"


@dataclass(frozen=True)
class DoctorOptions:
    """What the command line adds to the settings."""

    broker_config: Path | None = None  # Mosquitto's main file or conf.d folder
    cert_warn_days: int = 21  # as the certificate alerts (deploy/prometheus/)
    cert_fail_days: int = 7
    token_warn_days: int = 14
    skew_warn_s: float = 1.0
    skew_fail_s: float = 10.0


async def diagnose(
    settings: Settings,
    *,
    now: Callable[[], dt.datetime],
    options: DoctorOptions | None = None,
    wall: Callable[[], float] = time.time,
) -> list[Finding]:
    """Every check's findings, in a fixed order. `now` is the daemon's clock (tokens
    expire on it), `wall` this host's clock (compared with Redis's)."""
    opts = options or DoctorOptions()
    found = [_timezone(settings)]
    found += await asyncio.to_thread(_broker, settings, opts)
    client = redis_client(settings)
    try:
        redis_found, reachable = await _redis(settings, client)
        found += redis_found
        if reachable:
            keys = Keys(settings.key_prefix, settings.site)
            found.append(await _clock(client, wall, opts))
            found += await _archive(settings, client, keys)
            found.append(await _tokens(client, keys, now(), opts))
            found += await _promotions(settings, client, keys)
    finally:
        await client.aclose()
    found += _certificates(settings, now(), opts)
    return found


# -- Redis ---------------------------------------------------------------------------------


async def _redis(settings: Settings, client: Redis) -> tuple[list[Finding], bool]:
    """The policy findings, and whether Redis answered at all."""
    where = masked(settings.redis_url)
    try:
        facts = await read_facts(client)
    except (*REDIS_ERRORS, redis.exceptions.RedisError) as exc:
        what = f"{where} does not answer or will not say ({exc or 'refused'}); nothing in "
        fix = "systemctl status redis-server on its host; BONUSD_REDIS_URL, its password, "
        fix += "and INFO and CONFIG GET for bonusd's Redis user"
        return [Finding("redis", CheckStatus.FAIL, what + "Redis was checked", fix)], False
    found = []
    for fact in facts:
        for problem in fact.problems():
            what, _, fix = problem.rpartition("; ")
            found.append(Finding("redis", CheckStatus.FAIL, what, f"{fix} ({REDIS_FIX})"))
        for caution in fact.cautions():
            what, _, fix = caution.rpartition("; ")
            found.append(Finding("redis memory", CheckStatus.WARN, what, fix))
        if fact.maxmemory:
            found.append(_memory(fact.node, fact.used_memory, fact.maxmemory))
    if not any(f.status for f in found):
        nodes = ", ".join(f.node for f in facts)
        found.insert(
            0, Finding("redis", CheckStatus.OK, f"{nodes}: AOF, appendfsync always, noeviction")
        )
    return found, True


def _memory(node: str, used: int, limit: int) -> Finding:
    share = used / limit
    what = f"{node}: {used / GIB:.2f} GiB used of maxmemory {limit / GIB:.2f} GiB ({share:.0%})"
    fix = "raise maxmemory within half the host's RAM, or shorten BONUSD_DEDUP_WINDOW_S"
    if share >= 0.9:
        return Finding(
            "redis memory", CheckStatus.FAIL, what + ": writes are refused when full", fix
        )
    if share >= 0.8:
        return Finding("redis memory", CheckStatus.WARN, what, fix)
    return Finding("redis memory", CheckStatus.OK, what)


async def _clock(client: Redis, wall: Callable[[], float], opts: DoctorOptions) -> Finding:
    """This host's clock against Redis's host (the other daemon's host is compared the
    same way when the doctor runs there): halfway through the TIME round trip."""
    before = wall()
    seconds, micros = await client.time()
    after = wall()
    skew = seconds + micros / 1e6 - (before + after) / 2
    what = f"this host is {abs(skew):.3f} s {'behind' if skew > 0 else 'ahead of'} Redis's host"
    what += f" (round trip {1000 * (after - before):.1f} ms)"
    if abs(skew) >= opts.skew_fail_s:
        return Finding(
            "clock", CheckStatus.FAIL, what + ": draws, claim timers and leases drift", NTP_FIX
        )
    if abs(skew) >= opts.skew_warn_s:
        return Finding("clock", CheckStatus.WARN, what, NTP_FIX)
    return Finding("clock", CheckStatus.OK, what)


# -- this host -------------------------------------------------------------------------------


def _timezone(settings: Settings) -> Finding:
    """The zone's rules from the system's tzdata (updated by Debian's security updates),
    not only from the Python tzdata package (updated only with bonusd's)."""
    zone = settings.timezone
    system = next((Path(p) / zone for p in zoneinfo.TZPATH if (Path(p) / zone).is_file()), None)
    offset = dt.datetime.now(settings.zone).strftime("%Z, UTC%z")
    if system is None:
        return Finding(
            "timezone",
            CheckStatus.WARN,
            f"{zone} ({offset}) comes from the Python tzdata package, not the system's",
            "apt-get install tzdata, so rule changes arrive with the system's updates",
        )
    version = _tzdata_version(system.parent.parent if "/" in zone else system.parent)
    return Finding("timezone", CheckStatus.OK, f"{zone} ({offset}) from {system}{version}")


def _tzdata_version(root: Path) -> str:
    try:
        with (root / "tzdata.zi").open(encoding="utf-8") as fh:
            first = fh.readline().strip()
    except OSError:
        return ""
    return f", tzdata {first.removeprefix('# version ')}" if first.startswith("# version") else ""


def _broker(settings: Settings, opts: DoctorOptions) -> list[Finding]:
    found: list[Finding] = []
    if opts.broker_config is not None:
        try:
            values = read_broker_config(opts.broker_config)
        except OSError as exc:
            return [
                Finding(
                    "broker config",
                    CheckStatus.FAIL,
                    f"{opts.broker_config} cannot be read ({exc.strerror or exc})",
                    "give --broker-config Mosquitto's main file or conf.d folder, readable",
                )
            ]
        found += config_findings(values, max_payload_bytes=settings.max_payload_bytes)
    target = MqttTarget.from_settings(settings)
    where = masked(settings.mqtt_url)
    if target.username:  # secure mode: a probe would take over the daemon's session
        if opts.broker_config is None:
            found.append(_unread("broker accounts are in use, so the broker was not probed"))
        return found
    connack = probe_broker(target)
    if connack.refused:
        found.append(
            Finding(
                "broker",
                CheckStatus.FAIL,
                f"{where} refused or did not answer: {connack.refused}",
                "systemctl status mosquitto on its host; BONUSD_MQTT_URL",
            )
        )
        return found
    found.insert(
        0,
        Finding(
            "broker", CheckStatus.OK, f"{where} answers (receive window {connack.receive_maximum})"
        ),
    )
    said = packet_finding(connack.max_packet_size, settings.max_payload_bytes, "CONNACK")
    if opts.broker_config is None:
        found += [said, _unread("the queue limit and persistence are not told over MQTT")]
    elif said.status > CheckStatus.OK and not any(f.status for f in found if "packet" in f.check):
        found.append(
            Finding(
                "broker packet size",
                CheckStatus.WARN,
                f"the running broker says {said.what}, unlike {opts.broker_config}",
                "restart mosquitto to load its files, or point --broker-config at its files",
            )
        )
    return found


def _unread(why: str) -> Finding:
    return Finding(
        "broker config",
        CheckStatus.OK,
        f"not read: {why}; run the doctor on the broker's host with --broker-config "
        "/etc/mosquitto/mosquitto.conf",
    )


# -- the audit archive -------------------------------------------------------------------------


async def _archive(settings: Settings, client: Redis, keys: Keys) -> list[Finding]:
    folder = site_archive(settings.retention_audit_archive, settings.key_prefix, settings.site)
    found = [_free_disk(folder)]
    archive = AuditArchive(folder)
    tail = archive.tail()
    held = tail.seq if tail else 0
    trail = int(await client.llen(keys.audit))
    if tail is not None:
        same = cast(str | None, await client.lindex(keys.audit, held - 1))
        if same is None or from_jsonl(same)[0].hash != tail.hash:
            found.append(
                Finding(
                    "audit archive",
                    CheckStatus.FAIL,
                    f"{folder} ends with record {held}, which is not this site's record of "
                    "that seq (another site's or an older trail's archive)",
                    "check BONUSD_RETENTION_AUDIT_ARCHIVE; move the folder aside, keep it",
                )
            )
            return found
    copied = _last_copy(archive)
    if held >= trail:
        found.append(Finding("audit archive", CheckStatus.OK, f"holds all {trail} records{copied}"))
        return found
    first = from_jsonl(cast(str, await client.lindex(keys.audit, held)))[0]
    waiting = dt.datetime.now(dt.UTC) - dt.datetime.fromisoformat(first.time)
    what = f"{trail - held} of {trail} records not archived yet, the oldest for {_age(waiting)}"
    late = dt.timedelta(seconds=2 * settings.retention_interval_s + 300)
    if waiting <= late:
        return [*found, Finding("audit archive", CheckStatus.OK, what + copied)]
    fix = (
        "the leading daemon copies them every BONUSD_RETENTION_INTERVAL_S: on a standby's "
        "host this is expected; else look for 'audit archive not written' in its log"
    )
    return [*found, Finding("audit archive", CheckStatus.WARN, what + copied, fix)]


def _last_copy(archive: AuditArchive) -> str:
    segments = archive.segments()
    if not segments:
        return ""
    written = dt.datetime.fromtimestamp(segments[-1].stat().st_mtime, dt.UTC)
    return f"; last copy {written.isoformat(timespec='seconds')}"


def _age(delta: dt.timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours:.1f} h" if hours >= 1 else f"{delta.total_seconds() / 60:.0f} min"


def _free_disk(folder: Path) -> Finding:
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    usage = shutil.disk_usage(existing)
    share = usage.free / usage.total if usage.total else 0.0
    what = f"{usage.free / GIB:.1f} GiB free ({share:.0%}) on the disk of {folder}"
    fix = "free space or grow the disk: the archive must be kept three years"
    if usage.free < GIB // 4:
        return Finding("archive disk", CheckStatus.FAIL, what + ": archiving stops when full", fix)
    if usage.free < GIB or share < 0.1:
        return Finding("archive disk", CheckStatus.WARN, what, fix)
    return Finding("archive disk", CheckStatus.OK, what)


# -- expiries --------------------------------------------------------------------------------


async def _tokens(client: Redis, keys: Keys, now: dt.datetime, opts: DoctorOptions) -> Finding:
    rows = await TokenStore(client, keys).list()
    live = [r for r in rows if not r.get("revoked") and r.get("expires")]
    live = [r for r in live if dt.datetime.fromisoformat(r["expires"]) > now]
    soon_at = now + dt.timedelta(days=opts.token_warn_days)
    soon = [r for r in live if dt.datetime.fromisoformat(r["expires"]) <= soon_at]
    if not soon:
        what = f"{len(live)} token(s) in force, none expires within {opts.token_warn_days} days"
        return Finding("tokens", CheckStatus.OK, what)
    listed = ", ".join(f"{r['id']} ({r.get('role', '?')}, {r['expires'][:10]})" for r in soon)
    return Finding(
        "tokens",
        CheckStatus.WARN,
        f"{len(soon)} token(s) expire within {opts.token_warn_days} days: {listed}",
        "bonusd tokens issue --role ROLE --name NAME for each holder, hand it over, then "
        "bonusd tokens revoke ID",
    )


def _certificates(settings: Settings, now: dt.datetime, opts: DoctorOptions) -> list[Finding]:
    files = settings.watched_certificates
    if not files:
        return [Finding("certificates", CheckStatus.OK, "none listed in BONUSD_CERT_FILES")]
    found = []
    renew = "renew it from the casino's CA, install it, systemctl reload nginx (or mosquitto)"
    for path in files:
        try:
            certs = x509.load_pem_x509_certificates(path.read_bytes())
        except (OSError, ValueError) as exc:
            why = getattr(exc, "strerror", None) or "not PEM certificates"
            found.append(
                Finding("certificates", CheckStatus.FAIL, f"{path} cannot be read ({why})", renew)
            )
            continue
        expires = min(c.not_valid_after_utc for c in certs)
        left = expires - now.astimezone(dt.UTC)
        what = f"{path} expires {expires.date().isoformat()} (in {left.days} days)"
        if left < dt.timedelta(days=opts.cert_fail_days):
            found.append(Finding("certificates", CheckStatus.FAIL, what, renew))
        elif left < dt.timedelta(days=opts.cert_warn_days):
            found.append(Finding("certificates", CheckStatus.WARN, what, renew))
        else:
            found.append(Finding("certificates", CheckStatus.OK, what))
    return found


# -- promotions ------------------------------------------------------------------------------


async def _promotions(settings: Settings, client: Redis, keys: Keys) -> list[Finding]:
    folder, site = settings.promotions, settings.site
    try:
        mine = site_promotions(folder, site)
    except PromotionFileError as exc:
        first = str(exc).splitlines()[0][:300]
        fix = "bonusd promotions check FILE names every problem; fix the file on this host"
        return [Finding("promotions", CheckStatus.FAIL, first, fix)]
    if not mine:
        fix = "copy the site's promotion files into BONUSD_PROMOTIONS (their site = the site)"
        return [
            Finding("promotions", CheckStatus.WARN, f"no promotion of site {site} in {folder}", fix)
        ]
    ours = fingerprint(mine)
    found = [Finding("promotions", CheckStatus.OK, f"{len(mine)} promotion(s) of site {site} load")]
    running = cast(str | None, await client.get(keys.rules))
    if running is None:
        what = "no daemon of the site has published its rules yet"
        return [*found, Finding("promotion rules", CheckStatus.OK, what)]
    if running != ours:
        what = f"this host's files give rules {ours[:12]}, the site's daemons run {running[:12]}"
        fix = (
            "deploy the same promotion files on every daemon of the site, then "
            "POST /promotions/reload on one"
        )
        return [*found, Finding("promotion rules", CheckStatus.FAIL, what, fix)]
    return [*found, Finding("promotion rules", CheckStatus.OK, f"the site's rules ({ours[:12]})")]
