"""The member file's `pin_hash` column: blank is no PIN, anything but an argon2id hash is a
row error that never quotes the value, and the hash reaches Redis (for the kiosk) but no
API answer, dump, repr, log line or other key."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import logging

import pytest
from pydantic import ValidationError
from redis.asyncio import Redis

from bonusd.access.auth import Role
from bonusd.access.pins import hash_pin, verify_pin
from bonusd.clocks.clock import ManualClock
from bonusd.errors import ImportFileError
from bonusd.registry.files import check_file, parse_text
from bonusd.registry.records import MEMBER_COLUMNS, Member, Tier
from bonusd.settings import Settings
from simulators import build_floor, load_floor, write_members_csv
from simulators.demo.pins import demo_pins, pin_hashes
from tests.daemon_helpers import running

PIN = "5307"
HASH = hash_pin(PIN)
HEADER = "card,name,tier,pin_hash"


def _csv(*rows: tuple[str, str, str, str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")  # quotes the hash: it holds commas
    writer.writerow(HEADER.split(","))
    writer.writerows(rows)
    return out.getvalue()


def test_the_column_is_optional_and_blank_is_no_pin() -> None:
    assert MEMBER_COLUMNS[-1] == "pin_hash"
    text = _csv(("7001", "Lerato Dlamini", "A", HASH), ("7002", "Piet Nel", "Q", ""))
    a, b = parse_text(Member, text, source="members.csv")
    assert a.pin_hash == HASH and verify_pin(a.pin_hash, PIN)
    assert b.pin_hash is None
    (c,) = parse_text(Member, "card,name,tier\n7003,No Column,J\n", source="members.csv")
    assert c.pin_hash is None


def test_json_members_carry_the_hash_or_null() -> None:
    rows = [
        {"card": "1", "name": "A B", "tier": "Q", "pin_hash": HASH},
        {"card": "2", "name": "C D", "tier": "Q", "pin_hash": None},
        {"card": "3", "name": "E F", "tier": "Q", "pin_hash": ""},
    ]
    a, b, c = parse_text(Member, json.dumps(rows), source="m.json")
    assert (a.pin_hash, b.pin_hash, c.pin_hash) == (HASH, None, None)


@pytest.mark.parametrize(
    "value",
    [
        "5307",  # the PIN itself, not its hash
        "$2b$12$abcdefghijklmnopqrstuuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0",  # bcrypt
        HASH.replace("argon2id", "argon2i"),
        HASH.replace("m=24576", "m=4194304"),  # a cost every kiosk visit would pay
        HASH[:-33],  # cut short: a 7-byte hash
        HASH + "\u202e",
    ],
    ids=["plain-pin", "bcrypt", "argon2i", "huge-cost", "cut-short", "bidi-override"],
)
def test_a_bad_hash_is_a_row_error_naming_the_column_never_the_value(value: str) -> None:
    text = _csv(("7001", "Good Row", "Q", HASH), ("7002", "Bad Row", "Q", value))
    with pytest.raises(ImportFileError) as caught:
        parse_text(Member, text, source="members.csv")
    [error] = caught.value.errors
    assert (error.row, error.field) == (3, "pin_hash")
    assert "bonusd members hash-pin" in error.problem
    said = str(caught.value)
    assert value not in said
    assert len(value) < 30 or value[10:30] not in said


def test_an_unquoted_hash_in_csv_is_refused_without_its_pieces() -> None:
    """Written by hand without quotes, the hash's commas split it over three columns."""
    text = f"{HEADER}\n7001,Thandi Mokoena,Q,{HASH}\n"
    with pytest.raises(ImportFileError) as caught:
        parse_text(Member, text, source="members.csv")
    said = str(caught.value)
    assert {e.field for e in caught.value.errors} >= {"pin_hash"}
    assert "quote it" in said
    assert all(piece not in said for piece in HASH.split(",")[1:])


def test_a_validation_error_never_quotes_its_input() -> None:
    with pytest.raises(ValidationError) as caught:
        Member(card="7001", name="Sipho Ndlovu", tier=Tier.Q, pin_hash="$argon2id$secretish")
    assert "secretish" not in str(caught.value)
    with pytest.raises(ValidationError) as caught:
        Member.model_validate({"card": "7001", "name": "Sipho Ndlovu", "tier": "Q", "x": "Sipho"})
    assert "Sipho" not in str(caught.value)


def test_the_hash_goes_to_redis_and_nowhere_else() -> None:
    member = Member(card="7001", name="Sipho Ndlovu", tier=Tier.Q, pin_hash=HASH)
    assert member.to_redis()["pin_hash"] == HASH
    assert Member.from_redis(member.to_redis()) == member
    assert Member.from_redis(Member(card="7002", name="X", tier=Tier.J).to_redis()).pin_hash is None
    assert HASH not in member.to_index()
    assert Member.from_index("7001", member.to_index()).pin_hash is None
    for shown in (repr(member), str(member), member.model_dump_json(), json.dumps(
        member.model_dump(mode="json")
    ), str(member.model_dump())):  # fmt: skip
        assert "argon2" not in shown and "pin_hash" not in shown
    schema = json.dumps(Member.model_json_schema(mode="serialization"))
    assert "pin_hash" not in schema


def test_a_checked_file_keeps_the_hash_through_its_packed_rows() -> None:
    text = _csv(("7001", "A B", "Q", HASH), ("7002", "C D", "Q", ""))
    checked = check_file(Member, io.BytesIO(text.encode()), source="members.csv")
    a, b = checked.records()
    assert (a.pin_hash, b.pin_hash) == (HASH, None)


def test_the_demo_members_get_known_pins_through_the_member_file() -> None:
    floor = build_floor(load_floor("ci").config, seed=42, as_of=dt.date(2026, 10, 3))
    pins = demo_pins(floor.members)
    assert [p.pin for p in pins] == ["1234", "2468", "1357", "9999"]
    assert len({p.card for p in pins}) == len(pins)
    out = io.StringIO()
    write_members_csv(floor, out, pin_hashes(pins))
    members = {m.card: m for m in parse_text(Member, out.getvalue(), source="members.csv")}
    for p in pins:
        hashed = members[p.card].pin_hash
        assert hashed is not None and verify_pin(hashed, p.pin)
    assert sum(m.pin_hash is not None for m in members.values()) == len(pins)
    assert members[pins[-1].card].excluded  # the neutral screen's example
    assert demo_pins(members.values()) == pins  # the banner's choice, from the import


async def test_no_api_answer_log_line_or_other_key_holds_the_hash(
    settings: Settings,
    clock: ManualClock,
    aredis: Redis,
    site: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    body = _csv(("7001", "Sipho Ndlovu", "Q", HASH), ("7002", "Piet Nel", "J", ""))
    async with running(settings.model_copy(update={"log_level": "DEBUG"}), clock) as d:
        imported = await d.http.post(
            "/members/import", content=body, headers={"content-type": "text/csv"}
        )
        assert imported.status_code == 200, imported.text
        assert "argon2" not in imported.text
        desk = await d.client(Role.DESK)
        try:
            answers = [await desk.get(f"/members/{card}") for card in ("7001", "7002")]
        finally:
            await desk.aclose()
        answers.append(await d.http.get("/openapi.json"))
        stored = await d.service.store.member("7001")
    assert stored is not None and stored.pin_hash == HASH  # the kiosk can check it
    first = answers[0].json()
    assert first["member"]["name"] == "Sipho Ndlovu"
    assert "pin_hash" not in first["member"]
    for answer in answers:
        assert answer.status_code == 200
        assert "argon2" not in answer.text and "pin_hash" not in answer.text
    logged = "\n".join(
        [r.getMessage() for r in caplog.records] + [str(r.args) for r in caplog.records]
    )
    assert len(caplog.records) > 5, "the capture saw the daemon's logging"
    assert "argon2" not in logged
    # in Redis, only the member's own hash holds it (no index, no audit record, no log)
    holders = []
    async for key in aredis.scan_iter(match=f"bonusd:{{{site}}}:*", count=1000):
        kind = await aredis.type(key)
        if kind == "hash":
            values = list((await aredis.hgetall(key)).values())
        elif kind == "string":
            values = [await aredis.get(key)]
        elif kind == "list":
            values = await aredis.lrange(key, 0, -1)
        elif kind in ("set", "zset"):
            values = list(await aredis.smembers(key)) if kind == "set" else []
            values += await aredis.zrange(key, 0, -1) if kind == "zset" else []
        else:  # stream
            values = [str(entry) for entry in await aredis.xrange(key)]
        if any("argon2" in str(value) for value in values):
            holders.append(key)
    assert holders == [f"bonusd:{{{site}}}:member:7001"]
