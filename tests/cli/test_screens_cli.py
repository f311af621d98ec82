"""`bonusd screens pair|list|move` as an operator runs them (the command's console entry
point, run in the test's process, against the same Redis as the screen): a screen waiting with its code is paired
from the command line and collects its credential; a wrong code is refused with a clear
message and exit status 2; the list shows the screen; a move changes its area."""

from __future__ import annotations

import asyncio
import datetime as dt

from redis.asyncio import Redis

from bonusd.access.auth import TokenStore
from bonusd.access.pairing import PairingStore, shown_code
from bonusd.infra.keys import Keys
from tests.cli_helpers import Ran, run_main


async def bonusd(site: str, redis_url: str, *args: str) -> Ran:
    """The command's entry point (`python -m bonusd`), in this process."""
    env = {
        "BONUSD_SITE": site,
        "BONUSD_REDIS_URL": redis_url,
        "COLUMNS": "400",
        "BONUSD_LOG_LEVEL": "WARNING",
    }
    return await asyncio.to_thread(run_main, env, *args)


async def test_a_screen_is_paired_listed_and_moved_from_the_command_line(
    aredis: Redis, site: str, redis_url: str
) -> None:
    keys = Keys("bonusd", site)
    store = PairingStore(aredis, keys, TokenStore(aredis, keys))
    now = dt.datetime.now(dt.UTC)  # the command's clock is the wall clock here too
    started = await store.start(width=1920, height=1080, client="10.0.9.1", now=now)

    wrong = await bonusd(
        site, redis_url, "screens", "pair", "ZZZ-ZZZ", "--area", "main", "--name", "X"
    )
    assert wrong.returncode == 2
    assert "no screen is showing code" in wrong.stderr.replace("\n", " ")

    code = shown_code(started.code)
    done = await bonusd(
        site, redis_url, "screens", "pair", code, "--area", "main", "--name", "Bar 3"
    )
    assert done.returncode == 0, done.stderr
    assert f"screen showing {code} paired as 'Bar 3' in area main" in done.stdout
    claimed = await store.claim(started.secret, client="10.0.9.1", now=dt.datetime.now(dt.UTC))
    assert claimed.credential is not None
    screen_id = claimed.credential.principal.token_id
    record = await aredis.hgetall(keys.token(screen_id))
    assert record["paired_by"].startswith("command line (")

    listed = await bonusd(site, redis_url, "screens", "list")
    assert listed.returncode == 0, listed.stderr
    assert screen_id in listed.stdout and "Bar 3" in listed.stdout and "1920×1080" in listed.stdout

    moved = await bonusd(site, redis_url, "screens", "move", screen_id, "--area", "bar")
    assert moved.returncode == 0, moved.stderr
    assert f"screen {screen_id} ('Bar 3') now shows area bar" in moved.stdout
    assert await aredis.hget(keys.token(screen_id), "area") == "bar"
