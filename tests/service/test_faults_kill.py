"""`kill -9` of the daemon inside a leaderboard publication and inside a claim action
(`tests/crashpoint.py` lands the kill at an exact point of the step): on restart the
published boards are those of a run that never crashed, each published once, and a claim
action the client retries is applied once."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from bonusd.audit.chain import from_jsonl, verify_chain
from bonusd.promotions import Action, Side, schedule
from bonusd.promotions.kinds import Tombola
from bonusd.promotions.loader import load_promotion
from bonusd.promotions.pool import EntryPool
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, free_port
from tests.daemon_helpers import PROJECT, SAST, wait_healthy
from tests.push.helpers import NAMES, draw_day, golden_horse


@pytest.fixture
def gh_settings(settings: Settings, tmp_path: Path, site: str) -> Settings:
    return golden_horse(settings, tmp_path, site)


GH = "golden-horse-mega-points-chase"
FRIDAY = dt.datetime(2026, 10, 16, 8, 0, tzinfo=SAST)  # boards are published Fridays 08:00
ROUND_AT = dt.datetime(2026, 11, 7, 19, 0, tzinfo=SAST)  # the halfway draw, round 1
CARDS = [f"8001{n:04d}" for n in range(30)]
MEMBERS = "card,name,tier\n" + "".join(f"{c},Member{n} Surname{n},Q\n" for n, c in enumerate(CARDS))


def _env(site: str, redis_url: str, broker: LocalMosquitto, tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / f"promotions-{site}"
    folder.mkdir(parents=True)
    text = (PROJECT / "promotions" / f"{GH}.toml").read_text()
    (folder / f"{GH}.toml").write_text(text.replace('site = "golden-horse"', f'site = "{site}"'))
    (tmp_path / "members.csv").write_text(MEMBERS)
    return {
        **os.environ,
        "PYTHONPATH": str(PROJECT),
        "BONUSD_SITE": site,
        "BONUSD_REDIS_URL": redis_url,
        "BONUSD_MQTT_URL": broker.url,
        "BONUSD_HTTP_PORT": str(free_port()),
        "BONUSD_MQTT_CLIENT_ID": f"bonusd-{site}",
        "BONUSD_PROMOTIONS": str(folder),
        "BONUSD_CLOCK_SPEED": "1",
    }


def _cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "bonusd", *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _start(
    env: dict[str, str], at: dt.datetime, log: Path, crash: str = ""
) -> subprocess.Popen[bytes]:
    """The daemon on a simulated clock from `at`; with `crash`, it kills itself there."""
    env = {**env, "BONUSD_CLOCK_START": at.isoformat()}
    command = ["-m", "tests.crashpoint"] if crash else ["-m", "bonusd", "run"]
    if crash:
        env["BONUSD_TEST_CRASH"] = crash
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, *command], env=env, cwd=PROJECT, stdout=out, stderr=subprocess.STDOUT
        )


def _died_of_sigkill(daemon: subprocess.Popen[bytes], log: Path) -> None:
    assert daemon.wait(60) == -9, log.read_text()[-3000:]


def _stop(daemon: subprocess.Popen[bytes]) -> None:
    if daemon.poll() is None:
        daemon.terminate()
        daemon.wait(20)


def _wait(predicate: object, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


# -- a leaderboard publication -------------------------------------------------------------


def _board_keys(site: str, kind: str) -> list[str]:
    return [
        f"bonusd:{{{site}}}:{kind}:{GH}:{draw}:{side.value}"
        for draw in ("halfway", "bonus", "final")
        for side in Side
    ]


def _seed_boards(r: redis.Redis, env: dict[str, str], site: str) -> None:
    _cli(env, "members", "import", str(Path(env["BONUSD_PROMOTIONS"]).parent / "members.csv"))
    for n, key in enumerate(_board_keys(site, "lb")):
        r.zadd(key, {card: 1000 * (k % 17) + 7 * n + k for k, card in enumerate(CARDS)})


def _publications(r: redis.Redis, site: str) -> dict[str, object]:
    out: dict[str, object] = {}
    for key in _board_keys(site, "lbhist"):
        rows = r.lrange(key, 0, -1)
        if rows:
            out[key.split(":", 2)[2]] = [json.loads(x) for x in rows]
    return out


def _fired(r: redis.Redis, site: str) -> int:
    at = FRIDAY.astimezone(dt.UTC).isoformat()
    pattern = f"bonusd:{{{site}}}:fired:{at}:leaderboard_publish:*"
    return len(list(r.scan_iter(match=pattern, count=1000)))


def _friday_publications() -> int:
    promotion = load_promotion(PROJECT / "promotions" / f"{GH}.toml")
    return sum(
        a.action is Action.LEADERBOARD_PUBLISH and a.at == FRIDAY for a in schedule(promotion)
    )


@pytest.mark.slow  # seven daemon start-ups
@pytest.mark.timeout(600)
def test_kill_9_inside_a_board_publication_publishes_each_board_once(
    broker: LocalMosquitto, redis_url: str, tmp_path: Path
) -> None:
    r = redis.Redis.from_url(redis_url, decode_responses=True)
    sites = [f"t{os.urandom(5).hex()}", f"t{os.urandom(5).hex()}"]
    clean, crashed = sites
    actions = _friday_publications()
    assert actions >= 2
    start = FRIDAY + dt.timedelta(seconds=1)  # the publications run as the daemon starts
    daemon: subprocess.Popen[bytes] | None = None
    try:
        # a run that never crashes
        env = _env(clean, redis_url, broker, tmp_path / clean)
        _seed_boards(r, env, clean)
        log = tmp_path / "clean.log"
        daemon = _start(env, start, log)
        _wait(lambda: _fired(r, clean) == actions, "the clean run did not publish")
        _stop(daemon)
        expected = _publications(r, clean)
        assert expected and all(rows[0]["entries"] for rows in expected.values())  # type: ignore[index]

        # the same floor, killed inside its publications again and again: after the
        # write of a first side, after every side of one board (before its marker), and
        # before a write
        env = _env(crashed, redis_url, broker, tmp_path / crashed)
        _seed_boards(r, env, crashed)
        log = tmp_path / "crashed.log"
        for point in ("board-after:1", "board-after:2", "board-before:2", "board-after:3"):
            _died_of_sigkill(_start(env, start, log, crash=point), log)
        daemon = _start(env, start, log)
        _wait(lambda: _fired(r, crashed) == actions, "the restarted run did not publish")
        _stop(daemon)
        assert _publications(r, crashed) == expected  # each board once, as the clean run
        for key in _board_keys(crashed, "lbpub"):
            assert r.get(key) == r.get(key.replace(crashed, clean))
    finally:
        if daemon is not None:
            _stop(daemon)
        for site in sites:
            keys = list(r.scan_iter(match=f"bonusd:{{{site}}}:*", count=1000))
            if keys:
                r.delete(*keys)
        r.close()


async def test_a_publication_run_again_for_its_instant_changes_nothing(
    gh_settings: Settings, redis_url: str, site: str
) -> None:
    """What the restart above does, in the default suite: the scheduler runs a publication
    again whose marker the crash left unwritten. The board published first for that
    instant stays, even if the live board moved since; the history holds it once."""
    async with draw_day(gh_settings, redis_url, site) as d:
        store = d.service.promotion_store
        board = store.keys.board(GH, "halfway", Side.SLOTS.value)
        cards = list(NAMES)[:10]
        await d.service.redis.zadd(board, {c: 30_000 + n for n, c in enumerate(cards)})
        history = store.keys.board_history(GH, "halfway", Side.SLOTS.value)
        before = await d.service.redis.llen(history)  # the scheduler's own, of Nov 6
        first = await store.publish_board(GH, "halfway", Side.SLOTS, FRIDAY)
        await d.service.redis.zadd(board, {cards[0]: 90_000})  # play since the publication
        again = await store.publish_board(GH, "halfway", Side.SLOTS, FRIDAY)
        assert again == first
        assert await store.published_board(GH, "halfway", Side.SLOTS) == first
        assert await d.service.redis.llen(history) == before + 1
        later = await store.publish_board(GH, "halfway", Side.SLOTS, FRIDAY + dt.timedelta(days=7))
        assert later["entries"][0]["card"] == cards[0]  # a new instant publishes anew
        assert await d.service.redis.llen(history) == before + 2


# -- a claim action --------------------------------------------------------------------------


@pytest.fixture
def draw_env(site: str, redis_url: str, broker: LocalMosquitto, tmp_path: Path) -> dict[str, str]:
    env = _env(site, redis_url, broker, tmp_path)
    counts = {Tombola.POOLED: {f"C{n:05d}": 1 + n % 7 for n in range(500)}}
    pool = EntryPool.freeze(promotion_id=GH, draw_id="halfway", closed_at=ROUND_AT, counts=counts)
    r = redis.Redis.from_url(redis_url)
    r.set(f"bonusd:{{{site}}}:pool:{GH}:halfway", pool.canonical())
    r.close()
    return env


@pytest.mark.slow  # six daemon start-ups
@pytest.mark.timeout(600)
def test_kill_9_inside_a_claim_action_then_the_retry_applies_it_once(
    draw_env: dict[str, str], site: str, redis_url: str, tmp_path: Path
) -> None:
    env, log = draw_env, tmp_path / "daemon.log"
    port = int(env["BONUSD_HTTP_PORT"])
    base = f"http://127.0.0.1:{port}/promotions/{GH}/draws/halfway"
    r = redis.Redis.from_url(redis_url, decode_responses=True)
    ledger_key = f"bonusd:{{{site}}}:ledger:{GH}.halfway"

    def ledger(action: str, card: str = "") -> list[dict[str, Any]]:
        rows = [json.loads(x) for x in r.lrange(ledger_key, 0, -1)]
        return [
            x
            for x in rows
            if x["kind"] == "claim"
            and x["payload"]["action"] == action
            and card in ("", x["payload"]["card"])
        ]

    daemon = _start(env, ROUND_AT - dt.timedelta(seconds=1), log)
    try:
        _wait(lambda: len(ledger("created")) == 5, "round 1 was not drawn")
        _stop(daemon)
        at = ROUND_AT + dt.timedelta(seconds=5)
        token = _cli(
            {**env, "BONUSD_CLOCK_START": at.isoformat()},
            "tokens",
            "issue",
            "--role=crew",
            "--name=handheld",
            "--quiet",
        )
        crew = {"Authorization": f"Bearer {token}"}
        daemon = _start(env, at, log)
        wait_healthy(port)
        claims = httpx.get(f"{base}/book", headers=crew).json()["claims"]
        _stop(daemon)
        assert len(claims) == 5

        for point, claim in (("claim-after", claims[0]), ("claim-before", claims[1])):
            daemon = _start(env, at, log, crash=point)
            wait_healthy(port)
            url = f"{base}/claims/{claim['claim']}/present"
            with pytest.raises(httpx.TransportError):  # the answer never comes
                httpx.post(url, headers=crew, timeout=30)
            _died_of_sigkill(daemon, log)
            committed = len(ledger("present", claim["card"]))
            assert committed == (1 if point == "claim-after" else 0)

            daemon = _start(env, at + dt.timedelta(seconds=5), log)
            wait_healthy(port)
            retry = httpx.post(url, headers=crew, timeout=30)  # the handheld tries again
            if committed:
                assert retry.status_code == 409, retry.text
                assert "presented" in retry.json()["detail"]
            else:
                assert retry.status_code == 200, retry.text
            book = httpx.get(f"{base}/book", headers=crew).json()
            state = {c["claim"]: c["state"] for c in book["claims"]}
            assert state[claim["claim"]] == "presented"
            assert len(ledger("present", claim["card"])) == 1
            _stop(daemon)
        assert len(ledger("created")) == 5  # nothing else moved
        chain = from_jsonl("\n".join(r.lrange(f"bonusd:{{{site}}}:audit", 0, -1)))
        assert verify_chain(chain).ok
    finally:
        _stop(daemon)
        r.close()
