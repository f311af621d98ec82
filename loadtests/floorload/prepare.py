"""Setting up a scenario's site: the floor and its registry, the stream, the tokens.

The floor is the simulator's (`simulators.build_floor` from a named floor or a floor
file), exported with its CSV writers and imported with `bonusd members import` and
`bonusd devices import`, exactly as an operator would. The stream is the simulator's
every-game stream from the scenario's instant: its first `warmup_s` set the floor (the
floor fills over the first two minutes; only their card and rating starts and ends are
sent, by the runner, before locust starts), the rest is cut into one slice per MQTT user
(`config.py` has the format) and played by locust at the scenario's speed.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import random
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from zoneinfo import ZoneInfo

import msgspec
import redis.asyncio as aioredis

from bonusd.access.auth import Role, TokenStore
from bonusd.infra.keys import Keys
from bonusd.promotions import Promotion, load_promotion
from floorload.config import Tokens
from floorload.scenarios import Scenario
from simulators import build_floor, export_registry, generate_events, load_floor
from simulators.events import Payload
from simulators.floor import Floor
from simulators.floorfile import FloorSpec

CARD_EVENTS = frozenset({"card_in", "card_out", "rating_start", "rating_end"})
FLOOR_CARDS = 5000  # members on the floor handed to the desk and kiosk users
MEMBER_FILE_ROWS = 50_000


@dataclass(frozen=True)
class Site:
    """The run's private site and prefixes."""

    site: str
    key_prefix: str
    topic_prefix: str

    @property
    def keys(self) -> Keys:
        return Keys(self.key_prefix, self.site)

    @property
    def topic_head(self) -> str:
        return f"{self.topic_prefix}/{self.site}/"

    def daemon_env(
        self, *, redis_url: str, mqtt_url: str, http_port: int, work: Path, zone: ZoneInfo
    ) -> dict[str, str]:
        """The environment of this site's daemon (and its imports): the caller adds the
        clock, the log level and anything else of its own."""
        return {
            **os.environ,
            "BONUSD_SITE": self.site,
            "BONUSD_KEY_PREFIX": self.key_prefix,
            "BONUSD_TOPIC_PREFIX": self.topic_prefix,
            "BONUSD_REDIS_URL": redis_url,
            "BONUSD_MQTT_URL": mqtt_url,
            "BONUSD_HTTP_PORT": str(http_port),
            "BONUSD_PROMOTIONS": str(work / "promotions"),
            "BONUSD_MQTT_CLIENT_ID": f"bonusd-{self.site}",
            "BONUSD_TIMEZONE": str(zone),
            "BONUSD_REDIS_CHECK": "off",  # a throwaway Redis, no persistence (docs/deploy.md)
        }


@dataclass(frozen=True)
class Stream:
    """What the stream holds, as sent: the warm-up and the measured part."""

    warmup: list[tuple[str, bytes]]  # (kind/device, JSON) card events of the warm-up
    counts: Counter[str]  # event type -> count in the measured part
    per_second: list[int]  # events in each simulated second of the measured part
    measured_s: float  # simulated seconds of the measured part
    floor_cards: list[str]
    egm_slices: int
    table_slices: int


def scenario_start(scn: Scenario, spec: FloorSpec) -> dt.datetime:
    start = dt.datetime.fromisoformat(scn.start)
    return start if start.tzinfo else start.replace(tzinfo=spec.zone)


def build(scn: Scenario) -> tuple[FloorSpec, Floor, dt.datetime]:
    spec = load_floor(scn.floor)
    start = scenario_start(scn, spec)
    floor = build_floor(spec.config, seed=scn.seed, as_of=start.date())
    return spec, floor, start


def split_csv(path: Path, rows: int) -> list[Path]:
    """`path` as files of at most `rows` rows, each with the header."""
    with path.open(encoding="utf-8") as fh:
        header, lines = fh.readline(), fh.readlines()
    parts = []
    for i in range(0, len(lines), rows):
        part = path.with_name(f"{path.stem}-{i // rows:03d}.csv")
        part.write_text(header + "".join(lines[i : i + rows]), encoding="utf-8")
        parts.append(part)
    return parts


def start_imports(floor: Floor, folder: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Export the registry and import it with the `bonusd` command, in the background
    (members then devices); the caller waits for it. Members go in files of
    `MEMBER_FILE_ROWS`: one import is one Redis transaction, and one of 470,000 members
    can outlast the client's socket timeout on a busy machine."""
    devices, members = export_registry(floor, folder)
    commands = [
        f"{sys.executable} -m bonusd members import {part}"
        for part in split_csv(members, MEMBER_FILE_ROWS)
    ]
    commands.append(f"{sys.executable} -m bonusd devices import {devices}")
    log = (folder / "import.log").open("wb")
    return subprocess.Popen(
        ["sh", "-c", " && ".join(commands)], env=env, stdout=log, stderr=subprocess.STDOUT
    )


def wait_imports(proc: subprocess.Popen[bytes], folder: Path) -> dict[str, int]:
    """How many members and devices were imported, once the imports are done."""
    log = (folder / "import.log").read_text() if proc.wait() == 0 else ""
    if proc.returncode != 0:
        raise SystemExit(f"the registry import failed: {(folder / 'import.log').read_text()}")
    counts = {"members": 0, "devices": 0}
    for n, what in re.findall(r"imported (\d+) (member|device)", log):
        counts[f"{what}s"] += int(n)
    return counts


def write_promotion(source: Path, site: str, folder: Path) -> Promotion:
    """The scenario's promotion, moved to the run's site, in a folder of its own."""
    folder.mkdir(parents=True, exist_ok=True)
    text = re.sub(r'(?m)^site = "[^"]*"', f'site = "{site}"', source.read_text())
    path = folder / source.name
    path.write_text(text)
    return load_promotion(path)


def _restamp(payload: Payload, shift: dt.timedelta) -> Payload:
    """The payload with `ts` moved by `shift` (against a daemon running on its own clock)."""
    ts = dt.datetime.fromisoformat(str(payload["ts"])) + shift
    return {**payload, "ts": ts.isoformat(timespec="milliseconds")}


def _slices(devices: list[str], users: int) -> dict[str, int]:
    """Device -> slice: contiguous runs of devices (banks, pits), `users` slices."""
    size = max(1, math.ceil(len(devices) / max(1, users)))
    return {d: i // size for i, d in enumerate(devices)}


def write_stream(
    scn: Scenario,
    floor: Floor,
    start: dt.datetime,
    promotion: Promotion,
    *,
    zone: ZoneInfo,
    seconds: float,
    folder: Path,
    shift: dt.timedelta = dt.timedelta(0),
) -> Stream:
    """Generate warm-up + `seconds` of simulated play and write the slices."""
    folder.mkdir(parents=True, exist_ok=True)
    egm_of = _slices([d.device for d in floor.egms], scn.egm_users)
    table_of = _slices([d.device for d in floor.tables], scn.table_users)
    n_egm = max(egm_of.values(), default=-1) + 1
    n_table = max(table_of.values(), default=-1) + 1
    files: dict[tuple[str, int], IO[str]] = {}
    for kind, n in (("egm", n_egm), ("table", n_table)):
        for i in range(n):
            files[kind, i] = (folder / f"{kind}-{i:03d}.tsv").open("w", encoding="utf-8")
    encode = msgspec.json.Encoder().encode
    warm_ms = scn.warmup_s * 1000
    start_ms = int(start.timestamp() * 1000)
    warmup: list[tuple[str, bytes]] = []
    counts: Counter[str] = Counter()
    per_second = [0] * (int(seconds) + 1)
    cards: dict[str, None] = {}
    events = generate_events(
        floor,
        seed=scn.seed,
        start=start,
        duration=dt.timedelta(seconds=scn.warmup_s + seconds),
        zone=zone,
        promotion=promotion,
    )
    try:
        for ev in events:
            payload = _restamp(ev.payload, shift) if shift else ev.payload
            kind_device = f"{ev.kind}/{ev.device}"
            offset = ev.t_ms - start_ms - warm_ms
            etype = str(payload["type"])
            if offset < 0:
                if etype in CARD_EVENTS:
                    warmup.append((kind_device, encode(payload)))
                    if etype in ("card_in", "rating_start"):
                        cards[str(payload["card"])] = None
                continue
            n = egm_of[ev.device] if ev.kind == "egm" else table_of[ev.device]
            files[ev.kind, n].write(f"{offset}\t{kind_device}\t{encode(payload).decode()}\n")
            counts[etype] += 1
            per_second[min(offset // 1000, len(per_second) - 1)] += 1
    finally:
        for fh in files.values():
            fh.close()
    pool = list(cards)
    random.Random(scn.seed).shuffle(pool)
    return Stream(warmup, counts, per_second, seconds, pool[:FLOOR_CARDS], n_egm, n_table)


async def issue_tokens(
    redis_url: str, keys: Keys, areas: list[str], now: dt.datetime, days: float = 2.0
) -> Tokens:
    """One token per signage area and one per other role, on the daemon's clock."""
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    store = TokenStore(r, keys)
    valid = dt.timedelta(days=days)

    async def one(role: Role, name: str, area: str = "") -> str:
        issued = await store.issue(role=role, name=name, area=area, now=now, valid_for=valid)
        return issued.token

    try:
        signage = {a: await one(Role.SIGNAGE, f"load test screens {a}", a) for a in areas}
        return Tokens(
            signage=signage,
            crew=await one(Role.CREW, "load test handhelds"),
            desk=await one(Role.DESK, "load test desk"),
            kiosk=await one(Role.KIOSK, "load test kiosks"),
        )
    finally:
        await r.aclose()
