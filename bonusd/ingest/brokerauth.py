"""Broker accounts of a secure Mosquitto: one per device, bonusd's, and the ACL binding each.

From the device registry file (the one `bonusd devices import` takes) this writes, into
one directory, what `deploy/mosquitto/secure.conf` needs beside it:

    credentials.csv   username,password,role in clear text (mode 0600): for the interface
                      boards' set-up and bonusd's BONUSD_MQTT_USERNAME / _PASSWORD
    passwd            the same accounts hashed by `mosquitto_passwd` (Mosquitto's
                      password_file)
    acl               Mosquitto's acl_file: a device may publish only to its own topic,
                      only bonusd's accounts may read the floor

Running it again keeps the passwords of accounts that still exist (boards need not be
set up again), makes new ones for new devices and drops removed devices. `--rotate`
renews every password. Run it as `scripts/broker-credentials` (see its `--help`).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bonusd.errors import BonusdError, ConfigError
from bonusd.infra.wholefile import written_whole
from bonusd.registry.files import read_file
from bonusd.registry.records import Device

SERVICE = "bonusd"  # the daemon's account; more daemons (a shared group) get bonusd-2, ...
SIMULATOR = "bonusd-sim"  # the simulator and load tests: publishes for any device
ROLES = ("service", "simulator", "device")


@dataclass(frozen=True, slots=True)
class Account:
    username: str
    password: str
    role: str  # one of ROLES


def floor_topics(prefix: str, site: str) -> tuple[str, ...]:
    """Where device `%u` may publish: its own topic, as an EGM or as a table."""
    return tuple(f"{prefix}/{site}/{kind}/%u/events" for kind in ("egm", "table"))


def acl_text(prefix: str, site: str, accounts: Sequence[Account]) -> str:
    """Mosquitto's acl_file for these accounts (deploy/mosquitto/README.md explains it)."""
    floor = f"{prefix}/{site}/+/+/events"
    lines = [
        f"# Mosquitto ACL of site {site} (topic prefix {prefix}), written by",
        "# scripts/broker-credentials; do not edit, run it again.",
        "",
        "# bonusd: reads the whole floor and nothing else.",
    ]
    for account in accounts:
        if account.role == "service":
            lines += [f"user {account.username}", f"topic read {floor}", ""]
    if any(a.role == "simulator" for a in accounts):
        lines += [
            "# The simulator and load tests: publish for any device (test floors only).",
            f"user {SIMULATOR}",
            f"topic write {floor}",
            "",
        ]
    lines += [
        "# Every account, devices included: publish only to the topic named by its own",
        "# username (the device id), and read nothing.",
    ]
    lines += [f"pattern write {topic}" for topic in floor_topics(prefix, site)]
    return "\n".join(lines) + "\n"


def plan_accounts(
    devices: Sequence[Device],
    existing: dict[str, Account],
    *,
    daemons: int = 1,
    simulator: bool = False,
    rotate: bool = False,
) -> list[Account]:
    """The accounts to write: existing passwords kept unless `rotate`."""
    wanted: list[tuple[str, str]] = [
        (SERVICE if n == 1 else f"{SERVICE}-{n}", "service") for n in range(1, daemons + 1)
    ]
    if simulator:
        wanted.append((SIMULATOR, "simulator"))
    reserved = {name for name, _ in wanted} | {SIMULATOR}
    for device in devices:
        if device.device in reserved or device.device.startswith(f"{SERVICE}-"):
            raise ConfigError(
                f"device id {device.device!r} is reserved for bonusd's own broker accounts; "
                "rename the device in the registry"
            )
        if ":" in device.device:
            raise ConfigError(
                f"device id {device.device!r} holds ':', which a Mosquitto password file cannot "
                "store as a username; rename the device in the registry"
            )
        wanted.append((device.device, "device"))
    accounts = []
    for name, role in wanted:
        old = existing.get(name)
        keep = old is not None and old.role == role and not rotate
        password = old.password if keep and old is not None else secrets.token_urlsafe(24)
        accounts.append(Account(name, password, role))
    return accounts


def read_credentials(path: Path) -> dict[str, Account]:
    if not path.exists():
        return {}
    with path.open(newline="", encoding="utf-8") as csv_file:
        rows = list(csv.DictReader(csv_file))
    return {r["username"]: Account(r["username"], r["password"], r["role"]) for r in rows}


def _private(path: Path, text: str) -> None:
    """Write `text` to `path`, readable by its owner only, replacing it atomically."""
    with written_whole(path) as out:
        out.write(text)
        os.fchmod(out.fileno(), 0o600)


def mosquitto_passwd() -> str:
    found = shutil.which("mosquitto_passwd")
    for candidate in (found, "/usr/bin/mosquitto_passwd", "/usr/sbin/mosquitto_passwd"):
        if candidate and Path(candidate).is_file():
            return candidate
    raise ConfigError("mosquitto_passwd not found: install the mosquitto package")


def write_broker_files(
    out: Path,
    devices: Sequence[Device],
    *,
    prefix: str,
    site: str,
    daemons: int = 1,
    simulator: bool = False,
    rotate: bool = False,
) -> list[Account]:
    """Write credentials.csv, passwd and acl into `out`; return the accounts."""
    out.mkdir(parents=True, exist_ok=True)
    creds = out / "credentials.csv"
    accounts = plan_accounts(
        devices, read_credentials(creds), daemons=daemons, simulator=simulator, rotate=rotate
    )
    table = io.StringIO()
    writer = csv.writer(table, lineterminator="\n")
    writer.writerow(["username", "password", "role"])
    writer.writerows([a.username, a.password, a.role] for a in accounts)
    _private(creds, table.getvalue())
    # mosquitto_passwd -U hashes a file of user:password lines in place
    plain = "".join(f"{a.username}:{a.password}\n" for a in accounts)
    passwd = out / "passwd"
    _private(passwd, plain)
    result = subprocess.run(
        [mosquitto_passwd(), "-U", str(passwd)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        passwd.unlink(missing_ok=True)  # never leave the clear-text passwords there
        raise BonusdError(f"mosquitto_passwd -U failed: {result.stderr.strip()}")
    (out / "acl").write_text(acl_text(prefix, site, accounts), encoding="utf-8")
    return accounts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/broker-credentials",
        description="Write Mosquitto accounts (one per device, bonusd's) and their ACL.",
    )
    parser.add_argument("devices", type=Path, help="the device registry file (CSV or JSON)")
    parser.add_argument("--out", type=Path, required=True, help="directory to write into")
    parser.add_argument("--site", required=True, help="the site code (BONUSD_SITE)")
    parser.add_argument("--prefix", default="bonusd", help="BONUSD_TOPIC_PREFIX")
    parser.add_argument(
        "--daemons", type=int, default=1, help="bonusd accounts (a shared group needs one each)"
    )
    parser.add_argument(
        "--simulator", action="store_true", help=f"add {SIMULATOR} (test floors only)"
    )
    parser.add_argument("--rotate", action="store_true", help="renew every password")
    args = parser.parse_args(argv)
    try:
        if args.daemons < 1:
            raise ConfigError("--daemons must be 1 or more")
        devices = read_file(Device, args.devices)
        accounts = write_broker_files(
            args.out,
            devices,
            prefix=args.prefix,
            site=args.site,
            daemons=args.daemons,
            simulator=args.simulator,
            rotate=args.rotate,
        )
    except BonusdError as exc:
        print(f"broker-credentials: {exc}", file=sys.stderr)
        return 1
    roles = {r: sum(a.role == r for a in accounts) for r in ROLES}
    print(
        f"wrote {args.out}/credentials.csv (0600), passwd and acl: "
        f"{roles['device']} device(s), {roles['service']} bonusd account(s)"
        + (", the simulator" if roles["simulator"] else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
