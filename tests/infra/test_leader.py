"""Leader election: one daemon of a site runs the scheduler, a standby takes over after a
`kill -9`, each timed action fires once across the handover, an old leader whose lease
is gone is fenced out, and a leader that cannot renew steps down before its lease ends.

The evidence is Redis's: the lease (`leader` = `{token}:{holder}`), the fencing token
counter, the scheduler's markers and the token that wrote each (`leader:fired-by`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import cast

import httpx
import pytest
import redis.asyncio as aioredis

from bonusd.clocks.clock import ManualClock
from bonusd.errors import ConfigError
from bonusd.infra.health import Health
from bonusd.infra.keys import Keys
from bonusd.infra.leader import Claim, FencedOut, Leadership
from bonusd.infra.metrics import Metrics
from bonusd.promotions import Action, TimedAction, load_promotion, schedule
from bonusd.service.scheduler import Scheduler
from bonusd.settings import Settings, load_settings
from simulators.local.services import LocalMosquitto, LocalRedis, free_port
from tests.daemon_helpers import Daemon, running
from tests.service.helpers import MIN, OPENS, PROMOTION, WINDOW, controller, label


def leadership(r: aioredis.Redis, site: str, holder: str, ttl_s: float = 1.0) -> Leadership:
    return Leadership(
        redis=r,
        keys=Keys("bonusd", site),
        holder=holder,
        ttl_s=ttl_s,
        renew_s=ttl_s / 4,
        poll_s=ttl_s / 4,
        health=Health(),
        metrics=Metrics(),
    )


async def until(predicate: object, what: str, timeout: float = 30.0) -> None:
    """Wait for a condition (async or not), with a safety timeout."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                got = predicate()  # type: ignore[operator]
                if asyncio.iscoroutine(got):
                    got = await got
                if got:
                    return
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(what) from None


# -- one daemon -----------------------------------------------------------------------------


async def test_a_lone_daemon_leads_and_says_so(daemon: Daemon, aredis: aioredis.Redis) -> None:
    service = daemon.service
    await until(lambda: service.health.leader_token is not None, "never became leader")
    health = await daemon.get("/health")
    assert health["role"] == "leader"
    token = health["leader_token"]
    lease = await aredis.get(service.leader.lease_key)
    assert lease == f"{token}:{service.leader.holder}"
    assert await aredis.pttl(service.leader.lease_key) > 0  # it expires unless renewed
    metrics = (await daemon.http.get("/metrics")).text
    assert "bonusd_leader 1.0" in metrics
    assert f"bonusd_leader_token {float(token)}" in metrics


async def test_a_clean_stop_releases_the_lease(
    settings: Settings, clock: ManualClock, aredis: aioredis.Redis
) -> None:
    async with running(settings, clock) as d:
        await until(lambda: d.service.health.leader_token is not None, "never became leader")
        key = d.service.leader.lease_key
    assert await aredis.exists(key) == 0  # a standby need not wait for the TTL


# -- fencing ----------------------------------------------------------------------------------


def _action(at: dt.datetime) -> TimedAction:
    return TimedAction(at=at, action=Action.MULTIPLIER_STARTS, ids=("p", "m0"))


class _Timetable(Scheduler):
    """A scheduler of one given action (instead of a promotion's)."""

    def __init__(self, action: TimedAction, **kwargs: object) -> None:
        super().__init__(promotions=(), **kwargs)  # type: ignore[arg-type]
        self._one = action

    async def timetable(self) -> list[TimedAction]:
        return [self._one]


async def test_an_old_leader_whose_lease_is_gone_cannot_start_or_mark_an_action(
    site: str, aredis: aioredis.Redis
) -> None:
    keys = Keys("bonusd", site)
    old, new = leadership(aredis, site, "old"), leadership(aredis, site, "new")
    assert await old.acquire() == 1
    assert await new.acquire() is None  # held
    # the old leader pauses (no renewal): its lease runs out, the new one takes over
    await until(lambda: _gone(aredis, old.lease_key), "lease never expired")
    assert await new.acquire() == 2

    at = dt.datetime(2026, 10, 3, 17, 0, tzinfo=dt.UTC)
    ran: list[str] = []

    async def handler(a: TimedAction) -> None:
        ran.append(label(a))

    wakes = _Timetable(
        _action(at),
        clock=ManualClock(at + MIN),
        redis=aredis,
        keys=keys,
        handlers={Action.MULTIPLIER_STARTS: handler},
        fence=old.fence,
    )
    async with asyncio.timeout(10):
        await wakes.run(asyncio.Event())  # returns: fenced out, the timetable stops
    assert ran == [] and wakes.fired == 0
    marker = wakes._marker(_action(at))
    assert await aredis.exists(marker) == 0
    with pytest.raises(FencedOut):
        await old.fence.mark(marker, "late")
    assert await new.fence.claim(marker) is Claim.RUN
    assert await new.fence.mark(marker, at.isoformat())
    assert await aredis.hget(new.fence.fired_by, marker) == "2"
    assert not await new.fence.mark(marker, at.isoformat())  # once


async def test_a_leader_paused_inside_an_action_cannot_mark_it_fired(
    site: str, aredis: aioredis.Redis
) -> None:
    """The old leader starts an action, stalls; the new leader runs and marks it; the old
    one wakes up and finishes: its marker is refused and its timetable stops."""
    keys = Keys("bonusd", site)
    old, new = leadership(aredis, site, "old", ttl_s=30), leadership(aredis, site, "new")
    assert await old.acquire() == 1
    at = dt.datetime(2026, 10, 3, 17, 0, tzinfo=dt.UTC)
    action = _action(at)
    runs: list[int] = []

    async def handler(a: TimedAction) -> None:
        runs.append(1)
        # meanwhile: the lease lapses, the new leader takes over and fires the action
        await aredis.delete(old.lease_key)
        assert await new.acquire() == 2
        marker = stalled._marker(a)
        assert await new.fence.claim(marker) is Claim.RUN
        assert await new.fence.mark(marker, at.isoformat())

    stalled = _Timetable(
        action,
        clock=ManualClock(at + MIN),
        redis=aredis,
        keys=keys,
        handlers={Action.MULTIPLIER_STARTS: handler},
        fence=old.fence,
    )
    async with asyncio.timeout(10):
        await stalled.run(asyncio.Event())
    assert runs == [1] and stalled.fired == 0  # not counted, not marked by the old leader
    assert await aredis.hgetall(old.fence.fired_by) == {stalled._marker(action): "2"}


async def _gone(r: aioredis.Redis, key: str) -> bool:
    return await r.exists(key) == 0


# -- stepping down ----------------------------------------------------------------------------


class _Work:
    """A leader's work that records when it was told to stop and when it ended."""

    def __init__(self, leader: Leadership) -> None:
        self.leader = leader
        self.started = asyncio.Event()
        self.stopped_at: float | None = None
        self.valid_until: float | None = None  # the lease's validity when told to stop
        self.ended_at: float | None = None

    async def __call__(self, stop: asyncio.Event) -> None:
        self.started.set()
        try:
            await stop.wait()
            self.stopped_at = time.monotonic()
            self.valid_until = self.leader.valid_until
        finally:
            self.ended_at = time.monotonic()


async def test_a_leader_whose_lease_was_taken_steps_down(site: str, aredis: aioredis.Redis) -> None:
    leader = leadership(aredis, site, "a")
    work, stop = _Work(leader), asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(leader.run(stop, work))
        await asyncio.wait_for(work.started.wait(), 10)
        await aredis.set(leader.lease_key, "99:someone-else", px=60_000)
        await until(lambda: work.ended_at is not None, "the leader did not step down")
        assert leader.token is None and leader.health.role == "standby"
        await asyncio.sleep(3 * leader.poll_s)  # polls, and leaves the other's lease alone
        assert await aredis.get(leader.lease_key) == "99:someone-else"
        stop.set()
    assert leader.metrics.leader_changes.labels("lost")._value.get() == 1


async def test_a_leader_whose_work_fails_logs_it_stays_up_and_leads_again(
    site: str, aredis: aioredis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """A crash of the leader's work (say the scheduler hits a bug) ends that term only:
    the traceback is logged, the lease is released, and the daemon campaigns again with
    a new token instead of leaving its site without a scheduler."""
    leader = leadership(aredis, site, "a")
    terms: list[int | None] = []

    async def flaky(stop: asyncio.Event) -> None:
        terms.append(leader.token)
        if len(terms) == 1:
            raise RuntimeError("scheduler bug")
        await stop.wait()

    stop = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(leader.run(stop, flaky))
        await until(lambda: len(terms) == 2, "did not lead again after its work failed")
        stop.set()
    assert terms == [1, 2]
    failed = [r for r in caplog.records if "leader's work failed" in r.getMessage()]
    assert len(failed) == 1 and failed[0].exc_info is not None
    assert "scheduler bug" in str(failed[0].exc_info[1])


async def test_a_leader_cut_off_from_redis_steps_down_before_its_lease_ends(
    tmp_path: Path,
) -> None:
    """Redis stops answering (SIGSTOP): renewals hang; the leader stops its work before
    the lease it last renewed may lapse, and leads again once Redis is back."""
    with LocalRedis(tmp_path / "redis") as server:
        assert isinstance(server, LocalRedis) and server.proc is not None
        r = aioredis.Redis.from_url(server.url, decode_responses=True)
        leader = leadership(r, "cut", "a", ttl_s=4.0)
        work, stop = _Work(leader), asyncio.Event()
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(leader.run(stop, work))
                await asyncio.wait_for(work.started.wait(), 10)
                await asyncio.sleep(2.5)  # a few renewals
                server.proc.send_signal(signal.SIGSTOP)
                try:
                    await until(lambda: work.ended_at is not None, "no step-down", 20)
                finally:
                    server.proc.send_signal(signal.SIGCONT)
                assert work.valid_until is not None and work.ended_at is not None
                assert work.ended_at < work.valid_until  # its work ended while still leased
                assert leader.health.role == "standby"
                # Redis answers again; the lapsed lease is taken anew, with a new token
                await until(lambda: leader.token == 2, "did not lead again", 30)
                stop.set()
        finally:
            await r.aclose()


# -- takeover ---------------------------------------------------------------------------------


async def test_a_standby_takes_over_a_lease_nobody_renews_and_runs_what_is_due(
    settings: Settings, site: str, aredis: aioredis.Redis, tmp_path: Path
) -> None:
    """A leader dies silently (its lease stays until the TTL): the standby waits, takes
    the lease with the next token and fires the action that fell due meanwhile, once."""
    folder = _promotions(tmp_path, site)
    lease = {"leader_ttl_s": 2.0, "leader_renew_s": 0.5, "leader_poll_s": 0.25}  # not 5 s
    settings = settings.model_copy(update={"promotions": folder, **lease})
    actions = list(schedule(load_promotion(folder / "clock.toml")))
    dead = leadership(aredis, site, "a-daemon-that-died", ttl_s=settings.leader_ttl_s)
    assert await dead.acquire() == 1
    died = time.monotonic()  # its last renewal: from here on nobody extends the lease
    async with running(settings, ManualClock(OPENS + MIN)) as standby:
        service = standby.service
        assert (await standby.get("/health"))["role"] == "standby"
        await until(lambda: service.health.leader_token == 2, "the standby never took over")
        takeover_s = time.monotonic() - died
        marker = service.scheduler._marker(actions[0])
        await until(lambda: aredis.exists(marker), "the due action never fired")
        assert await aredis.hget(f"{service.keys.base}leader:fired-by", marker) == "2"
        assert service.scheduler.fired == 1
        assert (await standby.get("/health"))["role"] == "leader"
    print(f"\ntakeover of a silent leader's lease: {takeover_s:.2f} s after its last renewal")


def _promotions(tmp_path: Path, site: str) -> Path:
    """Four multiplier windows, 17:00-17:05 ... 17:30-17:35: an action every 5 minutes."""
    windows = "".join(WINDOW.format(n=n, a=10 * n, b=10 * n + 5) for n in range(4))
    folder = tmp_path / "promotions"
    folder.mkdir()
    (folder / "clock.toml").write_text(PROMOTION.format(site=site, windows=windows))
    return folder


# -- two daemon processes ---------------------------------------------------------------------


@contextlib.asynccontextmanager
async def process(env: dict[str, str], n: int, log: Path) -> AsyncIterator[_Proc]:
    """`bonusd run` as a child process: daemon number `n` of the site."""
    port = free_port()
    env = {**env, "BONUSD_HTTP_PORT": str(port), "BONUSD_MQTT_CLIENT_ID": f"{env['S']}-{n}"}
    with log.open("ab") as out:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bonusd", "run", env=env, stdout=out, stderr=out
        )
    proc = _Proc(child, port, f"{env['S']}-{n}", log)
    try:
        yield proc
    finally:
        if child.returncode is None:
            child.send_signal(signal.SIGTERM)
            await asyncio.wait_for(child.wait(), 20)


class _Proc:
    def __init__(self, child: asyncio.subprocess.Process, port: int, client: str, log: Path):
        self.child, self.port, self.client, self.log = child, port, client, log

    async def health(self) -> dict[str, object]:
        """The daemon's /health ({} while it does not answer)."""
        async with httpx.AsyncClient(timeout=2) as http:
            try:
                got: dict[str, object] = (
                    await http.get(f"http://127.0.0.1:{self.port}/health")
                ).json()
                return got
            except httpx.TransportError:
                return {}

    async def kill_9(self) -> None:
        self.child.send_signal(signal.SIGKILL)
        await self.child.wait()

    def done(self) -> list[str]:
        """The scheduler's "done" lines: the actions this daemon ran."""
        lines = self.log.read_text(errors="replace").splitlines()
        done = [x for x in lines if "bonusd.service.scheduler" in x and x.endswith(" done")]
        return [x.removesuffix(" done").split(": ", 1)[-1] for x in done]


@pytest.fixture
def floor_env(site: str, redis_url: str, broker: LocalMosquitto, tmp_path: Path) -> dict[str, str]:
    folder = _promotions(tmp_path, site)
    return {
        **os.environ,
        "S": f"bonusd-{site}",
        "BONUSD_SITE": site,
        "BONUSD_REDIS_URL": redis_url,
        "BONUSD_MQTT_URL": broker.url,
        "BONUSD_MQTT_SHARED_GROUP": f"g{site}",
        "BONUSD_PROMOTIONS": str(folder),
        "BONUSD_CLOCK": "shared",
        "BONUSD_CLOCK_START": OPENS.isoformat(),
        "BONUSD_CLOCK_SPEED": "600",
    }


@pytest.mark.parametrize(
    "speed",
    [
        pytest.param(600, id="actions-run-late-by-the-new-leader", marks=pytest.mark.slow),
        pytest.param(150, id="actions-on-time-after-the-handover", marks=pytest.mark.slow),
    ],
)
async def test_kill_9_of_the_leader_hands_over_and_each_action_fires_once(
    speed: int,
    floor_env: dict[str, str],
    site: str,
    aredis: aioredis.Redis,
    tmp_path: Path,
) -> None:
    keys = Keys("bonusd", site)
    lease_key, settings = f"{keys.base}leader", Settings()
    actions = list(schedule(load_promotion(Path(floor_env["BONUSD_PROMOTIONS"]) / "clock.toml")))
    marker = _Timetable(actions[0], clock=ManualClock(OPENS), redis=aredis, keys=keys, handlers={})
    markers = [marker._marker(a) for a in actions]
    t0 = time.monotonic()
    async with (
        controller(aredis, site, start=OPENS - MIN) as clock,
        process(floor_env, 1, tmp_path / "one.log") as one,
        process(floor_env, 2, tmp_path / "two.log") as two,
    ):
        both = (one, two)

        async def roles() -> list[str]:
            return sorted([str((await p.health()).get("role")) for p in both])

        await until(lambda: _settled(roles), "the two daemons never settled", 60)
        print(f"\nboth daemons up after {time.monotonic() - t0:.1f} s")
        assert await roles() == ["leader", "standby"]  # exactly one leader
        leader, standby = both if (await one.health())["role"] == "leader" else both[::-1]
        lease = cast(str | None, await aredis.get(lease_key))
        assert lease is not None and lease.split(":", 1)[1].startswith(f"{leader.client}#")
        first = int(lease.split(":")[0])

        await clock.set_speed(speed)
        await clock.resume()
        await until(lambda: aredis.exists(markers[1]), "the leader fired nothing", 30)
        killed = time.monotonic()
        await leader.kill_9()

        async def taken_over() -> bool:
            now = await aredis.get(lease_key)
            return now is not None and now != lease

        await until(taken_over, "the standby never took the lease", 30)
        takeover_s = time.monotonic() - killed
        lease = cast(str | None, await aredis.get(lease_key))
        assert lease is not None
        second, holder = lease.split(":", 1)
        assert int(second) == first + 1 and holder.startswith(f"{standby.client}#")
        print(
            f"\ntakeover after kill -9: {takeover_s:.2f} s (bound from settings: "
            f"{settings.leader_takeover_bound_s:g} s)"
        )
        await until(lambda: aredis.exists(markers[-1]), "the new leader did not finish", 60)
        assert (await standby.health())["leader_token"] == first + 1

    fired_by = await aredis.hgetall(f"{keys.base}leader:fired-by")
    assert sorted(fired_by) == sorted(markers)  # every action, each marked once
    tokens = [int(fired_by[m]) for m in markers]
    assert tokens == sorted(tokens) and set(tokens) == {first, first + 1}  # both led
    # the scheduler's "done" lines of both daemons: none twice (a kill -9 right after a
    # marker may cost its log line, never a second run)
    done = one.done() + two.done()
    assert len(done) == len(set(done)) and set(done) <= {label(a) for a in actions}
    assert len(done) >= len(actions) - 1
    assert await aredis.smembers(keys.active_multipliers) == set()


async def _settled(roles: Callable[[], Awaitable[list[str]]]) -> bool:
    return await roles() == ["leader", "standby"]


def test_the_lease_timings_are_checked() -> None:
    with pytest.raises(ConfigError, match="BONUSD_LEADER_RENEW_S"):
        load_settings(leader_ttl_s=3, leader_renew_s=2)
    with pytest.raises(ConfigError, match="BONUSD_LEADER_POLL_S"):
        load_settings(leader_poll_s=6)
    assert load_settings().leader_takeover_bound_s < 10  # "within 10 s" with the defaults
