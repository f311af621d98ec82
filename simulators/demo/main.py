"""The main job for a newcomer, in one command (`bonusd demo`, the README's `make demo`):
the daemon, a simulated casino floor publishing into it over MQTT, the HTTP API and the
floor's pages, on a shared simulated clock, until Ctrl-C (SIGINT) or SIGTERM.

It plays the demo promotion (`promotions/demo/`, never loaded by a production run) on
its site, `demo`, from Saturday 03 October 2026 16:55 at x60: a 3x multiplier opens at
17:00, a RAPS bonus jackpot alerts the crew at 17:05, a draw announces its winners at
17:10, and more follow. The demo's kiosk activates entries and its crew works the claims
(`simulators.demo.floor`); the clock runs at x1 while a claim is open.

Each run starts over: it takes the site's demo lock in Redis (a second demo on the same
Redis and key prefix is refused), deletes the site's other keys (so the shared clock
starts at 16:55 again), and has the broker forget the site's MQTT session. The floor
registry comes from the simulator's floor with the same seed, through the same CSV a
casino would export; the simulator is a child process that stops with the demo.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import io
import logging
import secrets
import shutil
import signal
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aiomqtt
import httpx
import redis.asyncio as aioredis

from bonusd.access.auth import Role
from bonusd.access.staff import StaffStore
from bonusd.audit.anchor import digest_folder
from bonusd.audit.archive import site_archive
from bonusd.errors import BonusdError
from bonusd.infra.keys import Keys
from bonusd.infra.redisclient import redis_client
from bonusd.infra.sharedclock import SharedClock
from bonusd.ingest.target import MqttTarget
from bonusd.promotions import Action, Promotion, TimedAction, load_promotions
from bonusd.promotions.timetable import promotion_timetable
from bonusd.registry.files import parse_text
from bonusd.registry.records import Device, Member
from bonusd.service.root import Service
from bonusd.settings import Settings
from simulators import (
    FloorFileError,
    build_floor,
    load_floor,
    write_devices_csv,
    write_members_csv,
)
from simulators.demo.banner import banner, floor_sizes
from simulators.demo.floor import (
    CrewBot,
    CrewFeed,
    DrawWindow,
    Kiosk,
    SlowMotion,
    start_simulator,
    stop_simulator,
    watch_simulator,
)
from simulators.demo.pins import demo_pins, pin_hashes, pin_lines
from simulators.demo.staff import add_demo_staff, staff_lines

logger = logging.getLogger("simulators.demo.main")
DEMO_PROMOTIONS = Path(__file__).resolve().parents[2] / "promotions" / "demo"
DEMO_START = dt.datetime.fromisoformat("2026-10-03T16:55:00+02:00")
TOKEN_LIFETIME = dt.timedelta(days=365)  # simulated: at x60, six days of wall time
LOCK_TTL_S = 15
# no signage token: the demo leaves its screen to be paired by hand (docs/security.md)
TOKEN_ROLES = (Role.CREW, Role.DESK, Role.KIOSK, Role.APP, Role.ADMIN)


@dataclass(frozen=True, slots=True)
class DemoOptions:
    """What `bonusd demo` takes on its command line."""

    floor: str = "ci"  # a named floor of simulators/floors, or a floor file
    seed: int = 42
    hours: float = 12.0  # simulated hours of play
    speed: float = 60.0  # simulated seconds per wall second, outside the slow motion
    crew_after: float = 8.0  # wall seconds an alert waits for a person; 0: no demo crew


def demo_promotion() -> tuple[Path, Promotion]:
    """The demo's one promotion file and promotion (its site is the demo's site)."""
    files = sorted(DEMO_PROMOTIONS.glob("*.toml")) if DEMO_PROMOTIONS.is_dir() else []
    if len(files) != 1:
        raise BonusdError(
            f"{DEMO_PROMOTIONS} must hold exactly one promotion file, not {len(files)} "
            "(`bonusd demo` runs from a checkout of the repository)"
        )
    return files[0], load_promotions(DEMO_PROMOTIONS)[0]


def demo_settings(settings: Settings, promotion: Promotion, options: DemoOptions) -> Settings:
    """The environment's settings (Redis, broker, HTTP, prefixes) with the demo's site,
    promotions and shared clock."""
    return settings.model_copy(
        update={
            "site": promotion.site,
            "promotions": DEMO_PROMOTIONS,
            "clock": "shared",
            "clock_start": DEMO_START,
            "clock_speed": options.speed,
            "mqtt_session_expiry_s": 60,  # the broker soon forgets a stopped demo
        }
    )


class Demo:
    """One run of the demo: `await Demo(settings, options).run()`."""

    def __init__(self, settings: Settings, options: DemoOptions) -> None:
        self.source, self.promotion = demo_promotion()
        self.settings = demo_settings(settings, self.promotion, options)
        self.options = options
        try:
            self.floor = load_floor(options.floor)
        except FloorFileError as exc:
            raise BonusdError(str(exc)) from exc
        self.keys = Keys(self.settings.key_prefix, self.settings.site)
        self.lock, self.owner = f"{self.keys.base}demo-lock", secrets.token_hex(8)
        host = self.settings.http_host
        self.host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        self.base = f"http://{self.host}:{self.settings.http_port}"
        self.service = Service(self.settings)
        self.staff: list[asyncio.Task[None]] = []
        self.failed = False

    def stop(self) -> None:
        """SIGINT / SIGTERM: the staff leaves, the daemon stops (and then the floor)."""
        for task in self.staff:
            task.cancel()
        self.service.stop()

    async def run(self) -> None:
        """Start over, import the floor, start the daemon and the simulator, print the
        pages' URLs with their tokens; run until stopped, then stop everything."""
        _check_port(self.settings)
        logging.getLogger("httpx").setLevel(logging.WARNING)  # the staff's every request
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stop)
        admin = redis_client(self.settings)
        try:
            try:
                deleted = await self._start_over(admin)
            except aioredis.ConnectionError as exc:
                raise BonusdError(f"no Redis at {self.settings.redis_url}: {exc}") from exc
            logger.info("demo: starting over (%d key(s) of %s* deleted)", deleted, self.keys.base)
            await _forget_mqtt_session(self.settings)
            if self.service.stop_event.is_set():
                print("bonusd demo stopped before the floor opened.", flush=True)
            else:
                await self._run(admin)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            with contextlib.suppress(Exception):
                if await admin.get(self.lock) == self.owner:
                    await admin.delete(self.lock)
            await admin.aclose()

    async def _start_over(self, r: aioredis.Redis) -> int:
        """Take the site's demo lock, then delete every other key of the site."""
        if not await r.set(self.lock, self.owner, nx=True, ex=LOCK_TTL_S):
            raise BonusdError(
                f"another `bonusd demo` runs on site {self.keys.site} with key prefix "
                f"{self.keys.prefix} (its lock {self.lock} is held, or was, by a demo killed "
                f"less than {LOCK_TTL_S} s ago); stop it first, or give this one its own "
                "BONUSD_KEY_PREFIX"
            )
        deleted, batch = 0, []
        async for key in r.scan_iter(match=f"{self.keys.base}*", count=10_000):
            if key != self.lock:
                batch.append(key)
            if len(batch) >= 1000:
                deleted += await r.unlink(*batch)
                batch = []
        deleted += await r.unlink(*batch) if batch else 0
        # the site's audit archive and digests go too: they continue (and anchor) the
        # trail just deleted, and the next run's trail starts a new chain the old archive
        # would refuse and the old digests would contradict (ERRORs)
        settings = self.settings
        archive = site_archive(settings.retention_audit_archive, settings.key_prefix, settings.site)
        digests = digest_folder(settings.digest_dir, settings.key_prefix, settings.site)
        for folder in (archive, digests):
            if folder.is_dir():
                await asyncio.to_thread(shutil.rmtree, folder)
                logger.info("demo: the previous run's audit files %s deleted", folder)
        return deleted

    async def _run(self, admin: aioredis.Redis) -> None:
        spec = self.floor
        devices, members = self._floor_records()
        service = self.service
        async with service, contextlib.AsyncExitStack() as stack, asyncio.TaskGroup() as tg:
            clock = service.clock
            if not isinstance(clock, SharedClock):
                raise BonusdError("the demo runs on the shared clock")
            if abs(clock.now() - DEMO_START) > dt.timedelta(minutes=1):
                raise BonusdError(
                    f"the shared clock of site {self.keys.site} reads {clock.now().isoformat()},"
                    " not the demo's start: another daemon or simulator uses the site; stop "
                    "it, or give the demo its own BONUSD_KEY_PREFIX"
                )
            await clock.pause()  # 16:55 until the floor opens
            await service.store.import_devices(devices)
            await service.store.import_members(members)
            tokens = await self._issue_tokens(clock)  # the demo's own crew, kiosk, scripts
            await add_demo_staff(StaffStore(service.redis, service.keys), clock.now())
            timetable = await promotion_timetable(service.redis, service.keys, self.promotion)
            tg.create_task(service.run(install_signal_handlers=False), name="daemon")
            if not await _until_serving(self.base, service.stop_event):
                return
            sizes = floor_sizes(devices, members)
            print(self._banner(spec.name, sizes, tokens, timetable), flush=True)
            print(staff_lines(self.base), flush=True)
            print(pin_lines(demo_pins(members)), flush=True)
            simulator = await self._start_simulator()
            stack.push_async_callback(self._stopped, simulator)
            await clock.resume()
            clients = {
                role: await stack.enter_async_context(
                    httpx.AsyncClient(
                        base_url=self.base,
                        timeout=10,
                        headers={"Authorization": f"Bearer {tokens[role]}"},
                    )
                )
                for role in (Role.CREW, Role.DESK, Role.KIOSK)
            }
            feed = CrewFeed(
                f"ws://{self.host}:{self.settings.http_port}/ws/crew", tokens[Role.CREW]
            )
            moments = [a.at for a in timetable if a.action in (Action.DRAW_ROUND, Action.JACKPOT)]
            kiosk = Kiosk(
                clock=clock,
                desk=clients[Role.DESK],
                kiosk=clients[Role.KIOSK],
                windows=draw_windows(timetable),
            )
            stop = service.stop_event
            jobs = [
                feed.run(stop),
                SlowMotion(clock, feed, moments).run(stop),
                kiosk.run(stop),
                watch_simulator(simulator, self._floor_failed),
                _keep_lock(admin, self.lock, self.owner, stop),
            ]
            if self.options.crew_after > 0:
                jobs.append(CrewBot(feed, clients[Role.CREW], self.options.crew_after).run(stop))
            self.staff += [tg.create_task(job) for job in jobs]
            await stop.wait()
            self.stop()  # whoever stopped the daemon, the staff leaves too
        if self.failed:
            raise BonusdError("the floor simulator failed (its output is above)")

    def _floor_records(self) -> tuple[list[Device], list[Member]]:
        """The floor's devices and members, through the CSV files a casino exports."""
        spec = self.floor
        floor = build_floor(
            spec.config, seed=self.options.seed, as_of=DEMO_START.astimezone(spec.zone).date()
        )
        devices_csv, members_csv = io.StringIO(), io.StringIO()
        write_devices_csv(floor, devices_csv)
        write_members_csv(floor, members_csv, pin_hashes(demo_pins(floor.members)))
        devices = parse_text(Device, devices_csv.getvalue(), source="simulated devices.csv")
        members = parse_text(Member, members_csv.getvalue(), source="simulated members.csv")
        return devices, members

    async def _issue_tokens(self, clock: SharedClock) -> dict[Role, str]:
        """One token per machine's role, for the demo's life."""
        tokens = {}
        for role in TOKEN_ROLES:
            issued = await self.service.tokens.issue(
                role=role,
                name=f"demo {role}",
                now=clock.now(),
                valid_for=TOKEN_LIFETIME,
            )
            tokens[role] = issued.token
        return tokens

    def _floor_failed(self) -> None:
        self.failed = True
        self.stop()

    async def _stopped(self, simulator: asyncio.subprocess.Process) -> None:
        code = await stop_simulator(simulator)
        how = "stopped" if code == -signal.SIGTERM else f"exit {code}"
        print(
            f"bonusd demo stopped: the daemon and the simulated floor (pid {simulator.pid}, "
            f"{how}) are down. The demo's data stays in Redis ({self.keys.base}*) until the "
            "next demo starts over.",
            flush=True,
        )

    def _banner(
        self, floor_name: str, sizes: str, tokens: dict[Role, str], timetable: list[TimedAction]
    ) -> str:
        """What the demo prints: the pages with their tokens, then what to watch."""
        return banner(
            site=self.keys.site, floor_name=floor_name, sizes=sizes, promotion=self.promotion,
            start=DEMO_START, speed=self.options.speed, crew_after=self.options.crew_after,
            base=self.base, tokens=tokens, timetable=timetable,
        )  # fmt: skip

    async def _start_simulator(self) -> asyncio.subprocess.Process:
        s, o = self.settings, self.options
        args = [
            "run", f"--mqtt-url={s.mqtt_url}", f"--site={s.site}", f"--prefix={s.topic_prefix}",
            f"--floor={o.floor}", f"--seed={o.seed}", f"--start={DEMO_START.isoformat()}",
            f"--duration={round(o.hours * 60)}m", f"--speed={o.speed:g}", "--clock=shared",
            f"--redis-url={s.redis_url}", f"--key-prefix={s.key_prefix}",
            f"--promotion={self.source}", f"--run-id=demo{secrets.token_hex(3)}",
            "--no-progress",
        ]  # fmt: skip
        return await start_simulator(args)


def draw_windows(timetable: Sequence[TimedAction]) -> list[DrawWindow]:
    """When each draw's entries may be activated, from the promotion's timetable."""
    opens: dict[tuple[str, ...], dt.datetime] = {}
    windows = []
    for item in timetable:
        if item.action is Action.ACTIVATION_OPENS:
            opens[item.ids] = item.at
        elif item.action is Action.BIN_CLOSES and item.ids in opens:
            windows.append(DrawWindow(item.ids[0], item.ids[1], opens[item.ids], item.at))
    return windows


async def _keep_lock(r: aioredis.Redis, key: str, owner: str, stop: asyncio.Event) -> None:
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), LOCK_TTL_S / 3)
        with contextlib.suppress(Exception):
            if await r.get(key) == owner:
                await r.expire(key, LOCK_TTL_S)


async def _forget_mqtt_session(settings: Settings) -> None:
    """Have the broker drop the site's MQTT session (messages queued for an earlier demo):
    connect with its client id and a clean start, and leave."""
    target = MqttTarget.from_url(settings.mqtt_url)
    with contextlib.suppress(aiomqtt.MqttError):
        async with aiomqtt.Client(
            target.host,
            target.port,
            identifier=settings.client_id,
            username=target.username,
            password=target.password,
            protocol=aiomqtt.ProtocolVersion.V5,
            clean_start=True,
            timeout=5,
        ):
            pass


def _check_port(settings: Settings) -> None:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            s.bind((settings.http_host, settings.http_port))
        except OSError as exc:
            raise BonusdError(
                f"cannot serve on {settings.http_host}:{settings.http_port} ({exc.strerror}): "
                "is another bonusd running? Set BONUSD_HTTP_PORT to another port"
            ) from exc


async def _until_serving(base: str, stop: asyncio.Event) -> bool:
    """Wait until the daemon answers `/health`; False if it was stopped first."""
    async with httpx.AsyncClient(base_url=base, timeout=2) as http:
        while not stop.is_set():
            with contextlib.suppress(httpx.TransportError):
                if (await http.get("/health")).status_code == 200:
                    return True
            await asyncio.sleep(0.05)
    return False


def main(settings: Settings, options: DemoOptions) -> None:
    """Run the demo until SIGINT or SIGTERM."""

    async def demo() -> None:
        await Demo(settings, options).run()

    asyncio.run(demo())
