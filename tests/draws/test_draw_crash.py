"""`kill -9` of the daemon around a draw round and during a claim timer: on restart the
same winners, the same deadlines, no duplicate and no lost announcement."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis

from bonusd.audit.chain import from_jsonl, verify_chain
from bonusd.promotions.kinds import Tombola
from bonusd.promotions.pool import EntryPool
from simulators.local.services import LocalMosquitto, free_port
from tests.daemon_helpers import daemon_process, wait_healthy

GH = "golden-horse-mega-points-chase"
ROOT = Path(__file__).parents[2]
SUBJECT = f"{GH}.halfway"
ROUND_AT = dt.datetime(2026, 11, 7, 19, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))


@pytest.fixture
def env(site: str, redis_url: str, broker: LocalMosquitto, tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "promotions"
    folder.mkdir()
    text = (ROOT / "promotions" / f"{GH}.toml").read_text()
    (folder / f"{GH}.toml").write_text(text.replace('site = "golden-horse"', f'site = "{site}"'))
    r = redis.Redis.from_url(redis_url)
    counts = {Tombola.POOLED: {f"C{n:05d}": 1 + n % 7 for n in range(2000)}}
    pool = EntryPool.freeze(promotion_id=GH, draw_id="halfway", closed_at=ROUND_AT, counts=counts)
    r.set(f"bonusd:{{{site}}}:pool:{GH}:halfway", pool.canonical())
    r.close()
    return {
        **os.environ,
        "BONUSD_SITE": site,
        "BONUSD_REDIS_URL": redis_url,
        "BONUSD_MQTT_URL": broker.url,
        "BONUSD_HTTP_PORT": str(free_port()),
        "BONUSD_MQTT_CLIENT_ID": f"bonusd-{site}",
        "BONUSD_PROMOTIONS": str(folder),
    }


def _ledger(r: redis.Redis, site: str) -> list[dict[str, object]]:
    rows = r.lrange(f"bonusd:{{{site}}}:ledger:{SUBJECT}", 0, -1)
    return [json.loads(x) for x in rows]


def _start(env: dict[str, str], at: dt.datetime, log: str) -> subprocess.Popen[bytes]:
    env = {**env, "BONUSD_CLOCK_START": at.isoformat(), "BONUSD_CLOCK_SPEED": "1"}
    daemon = daemon_process(env, log)
    try:
        wait_healthy(int(env["BONUSD_HTTP_PORT"]))
    except BaseException:  # never leave a daemon running behind a failed test
        _kill(daemon)
        raise
    return daemon


def _kill(daemon: subprocess.Popen[bytes]) -> None:
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()


def _wait(predicate: object, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.mark.slow  # ~30-40 s of daemon restarts: `make test-slow`
def test_kill_9_around_a_draw_round_and_a_claim_timer(
    env: dict[str, str], site: str, redis_url: str, tmp_path: Path
) -> None:
    r = redis.Redis.from_url(redis_url, decode_responses=True)
    log = str(tmp_path / "daemon.log")
    rng = random.Random(7)
    picks: list[list[str]] = []
    try:
        # kill it again and again just before, at and just after the round's instant
        for _ in range(4):
            daemon = _start(env, ROUND_AT - dt.timedelta(seconds=1), log)
            time.sleep(1 + rng.uniform(-0.3, 0.4))
            _kill(daemon)
            picks.append(
                [str(x["payload"]["card"]) for x in _ledger(r, site) if x["kind"] == "pick"]
            )
        daemon = _start(env, ROUND_AT - dt.timedelta(seconds=1), log)
        _wait(lambda: sum(x["kind"] == "pick" for x in _ledger(r, site)) == 5, "round not drawn")
        _kill(daemon)
        ledger = _ledger(r, site)
        winners = [str(x["payload"]["card"]) for x in ledger if x["kind"] == "pick"]
        assert len(winners) == len(set(winners)) == 5
        for seen in picks:  # every crash left either no picks or exactly these
            assert seen in ([], winners)
        created = [
            x for x in ledger if x["kind"] == "claim" and x["payload"]["action"] == "created"
        ]
        assert len(created) == 5  # each winner announced once
        deadlines = {x["payload"]["card"]: x["payload"]["detail"]["deadline"] for x in created}
        key = f"bonusd:{{{site}}}:deadlines"
        indexed = r.zscore(key, f"draw:{SUBJECT}")
        assert indexed is not None

        # restart after the 90 s claim time: each no-show once, each redraw announced once,
        # and the deadlines are the ones set before the crash
        late = ROUND_AT + dt.timedelta(seconds=95)
        for _ in range(2):
            daemon = _start(env, late, log)
            time.sleep(rng.uniform(0.0, 0.6))
            _kill(daemon)
        daemon = _start(env, late, log)

        def settled() -> bool:
            return sum(x["payload"].get("action") == "no_show" for x in _ledger(r, site)) == 5

        _wait(settled, "the no-shows were not all recorded")
        time.sleep(0.5)
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(15)
        ledger = _ledger(r, site)
        no_shows = [x for x in ledger if x["payload"].get("action") == "no_show"]
        assert sorted(str(x["payload"]["card"]) for x in no_shows) == sorted(winners)
        redraws = [str(x["payload"]["card"]) for x in ledger if x["kind"] == "redraw"]
        assert len(redraws) == len(set(redraws)) == 5 and not set(redraws) & set(winners)
        again = [x for x in ledger if x["kind"] == "claim" and x["payload"]["action"] == "created"]
        assert len(again) == 10
        assert {
            x["payload"]["card"]: x["payload"]["detail"]["deadline"] for x in again[:5]
        } == deadlines
        for x in no_shows:  # acted on after, never before, the recorded deadline
            assert x["time"] > deadlines[x["payload"]["card"]]
        chain = from_jsonl("\n".join(r.lrange(f"bonusd:{{{site}}}:audit", 0, -1)))
        assert verify_chain(chain).ok
    finally:
        r.close()
