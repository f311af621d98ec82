"""Untrusted text reaching the operator's terminal through the real `bonusd` command (run
as a process, its bytes read back): a dead-lettered payload, a token's name and area, an
import's error message. No ESC or BEL byte and no bidi override reaches the terminal (each
is shown as a visible escape), and Rich markup is shown literally, never obeyed
(bonusd/cli/text.py)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import redis
import redis.asyncio as aioredis

from bonusd.floor.store import DeadLetter, FloorStore
from bonusd.floor.telemetry import Reason
from bonusd.infra.keys import Keys

MARKUP = "[link=https://evil.example/x]click[/link][bold red]"
HOSTILE = f"\x1b]0;owned\x07\x1b[2J{MARKUP}\u202eenaJ\x9b6n"
BONUSD = [sys.executable, "-m", "bonusd"]


def run(site: str, redis_url: str, *args: str, stdin: str | None = None) -> tuple[str, str, int]:
    env = {
        **os.environ,
        "BONUSD_SITE": site,
        "BONUSD_REDIS_URL": redis_url,
        "COLUMNS": "400",  # a wide table: no cell is folded across lines
        "BONUSD_LOG_LEVEL": "WARNING",
    }
    done = subprocess.run(
        [*BONUSD, *args], env=env, capture_output=True, timeout=60, input=stdin, check=False
    )
    for stream in (done.stdout, done.stderr):
        assert b"\x1b" not in stream and b"\x07" not in stream, stream[:500]
        assert "\u202e".encode() not in stream and "\x9b".encode() not in stream, stream[:500]
    return done.stdout.decode(), done.stderr.decode(), done.returncode


async def test_deadletters_show_hostile_payloads_inert(site: str, redis_url: str) -> None:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        store = FloorStore(
            r,
            Keys("bonusd", site),
            dedup_ttl_s=60,
            deadletter_maxlen=100,
            deadletter_payload_bytes=4096,
        )
        letter = DeadLetter(
            reason=Reason.INVALID,
            topic=f"bonusd/{site}/egm/EGM-{HOSTILE}/events",
            payload=HOSTILE.encode(),
            detail=f"bad field {HOSTILE}",
            arrived_ms=int(dt.datetime.now(dt.UTC).timestamp() * 1000),
        )
        await store.apply_batch([], [letter])
    finally:
        await r.aclose()
    out, err, code = run(site, redis_url, "deadletters")
    assert code == 0, err
    assert MARKUP in out  # shown as text, in the payload, topic and detail columns
    assert out.count("[link=https://evil.example/x]") >= 3
    assert "\\x1b]0;owned\\x07\\x1b[2J" in out and "\\u202eenaJ" in out
    json_out, _, code = run(site, redis_url, "deadletters", "--json")
    assert code == 0 and "\\u001b" in json_out


def test_tokens_list_shows_names_and_areas_inert(site: str, redis_url: str) -> None:
    """A token stored before names and areas were checked (written here directly)."""
    r = redis.Redis.from_url(redis_url, decode_responses=True)
    base = Keys("bonusd", site).base
    record = {
        "role": "signage",
        "name": HOSTILE,
        "area": "<script>alert(1)</script>",
        "digest": "0" * 64,
        "issued": "2026-10-03T10:00:00+00:00",
        "expires": "2027-10-03T10:00:00+00:00",
        "revoked": "",
    }
    with r:
        r.hset(f"{base}token:0123456789ab", mapping=record)
        r.sadd(f"{base}tokens", "0123456789ab")
    out, err, code = run(site, redis_url, "tokens", "list")
    assert code == 0, err
    assert MARKUP in out and "<script>alert(1)</script>" in out


def test_tokens_refuse_hostile_areas_and_names(site: str, redis_url: str) -> None:
    _, err, code = run(
        site, redis_url, "tokens", "issue", "--role", "signage", "--name", "Screen 1",
        "--area", "<script>alert(1)</script>",
    )  # fmt: skip
    assert code == 2 and "area" in err and "a-z, 0-9" in err
    _, err, code = run(
        site, redis_url, "tokens", "issue", "--role", "desk", "--name", f"Desk {HOSTILE}"
    )
    assert code == 2 and "control or text-direction" in err
    out, err, code = run(
        site, redis_url, "tokens", "issue", "--role", "signage", "--name", "Screen 1",
        "--area", "main", "--quiet",
    )  # fmt: skip
    assert code == 0 and out.startswith("bd_"), err


def test_an_import_error_quoting_hostile_input_prints_it_inert(
    site: str, redis_url: str, tmp_path: Path
) -> None:
    members = tmp_path / "members.csv"
    members.write_text(
        "card,name,tier,mobile\n"
        f'7001,Anna,Q,"{MARKUP}+27\x1b[2J"\n'
        f"7002,Anna \u202eSmith,Q,\n"
        f'7003,"Anna\x1b]0;x\x07",Q,\n',
        encoding="utf-8",
    )
    out, err, code = run(site, redis_url, "members", "import", str(members))
    assert code == 2, (out, err)
    assert "nothing imported" in err
    assert MARKUP in err  # the mobile number's message quotes it: literally
    assert "row 3, field 'name'" in err and "U+202E" in err
    assert "row 4, field 'name'" in err and "U+001B" in err
