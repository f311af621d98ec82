"""The daily digest of the audit chain's head (pure): what it sums up at a gaming day's
close, its signable text read back, an edited digest refused, and the check of a chain
against it: an untouched chain passes, a re-hashed one (which verifies on its own) fails
naming the record and both hashes."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from bonusd.audit.chain import GENESIS, AuditRecord, ChainWalk, verify_chain
from bonusd.audit.digest import (
    SETTLE,
    DigestChecks,
    DigestFold,
    check_digest,
    day_digest,
    digest_text,
    is_finished,
    last_finished_day,
    next_anchor_time,
    not_over,
    read_digest,
)
from bonusd.errors import AuditFormatError
from tests.audit.helpers import CALENDAR, local, rehashed, trail

DAY = dt.date(2026, 10, 3)
PAPER = ("site", "gaming day", "last seq", "head hash", "code")
# gaming day 2 Oct (its night), three records of 3 Oct (the last a second before the
# close), and one of 4 Oct
INSTANTS = [local(3, 7, 59), local(3, 8), local(3, 20), local(4, 7, 59, 59), local(4, 8)]


def test_a_day_digest_is_the_chain_head_at_the_close() -> None:
    records = trail(INSTANTS)
    digest = day_digest(records, site="montecasino", day=DAY, calendar=CALENDAR)
    assert (digest.site, digest.day, digest.last_seq) == ("montecasino", DAY, 4)
    assert digest.head_hash == records[3].hash
    assert digest.records == 3
    assert digest.first_time == "2026-10-03T06:00:00.000000Z"
    assert digest.last_time == "2026-10-04T05:59:59.000000Z"
    assert digest.closes == "2026-10-04T06:00:00.000000Z"
    assert digest.intact and digest.chain == "chain intact: 4 records"
    head = records[3].hash
    assert digest.code == f"{head[:4]}-{head[4:8]}-{head[8:12]}-{head[12:16]}"
    # the same digest from the chain up to the close only: later records change nothing
    assert day_digest(records[:4], site="montecasino", day=DAY, calendar=CALENDAR) == digest


def test_a_quiet_day_and_a_day_before_the_trail() -> None:
    records = trail(INSTANTS)
    quiet = day_digest(records, site="s", day=dt.date(2026, 10, 5), calendar=CALENDAR)
    assert (quiet.last_seq, quiet.head_hash, quiet.records) == (5, records[4].hash, 0)
    assert quiet.first_time is None and quiet.last_time is None
    before = day_digest(records, site="s", day=dt.date(2026, 10, 1), calendar=CALENDAR)
    assert (before.last_seq, before.head_hash, before.records) == (0, GENESIS, 0)
    ancient = day_digest(records, site="s", day=dt.date(500, 1, 1), calendar=CALENDAR)
    assert (ancient.last_seq, ancient.closes[:11]) == (0, "0500-01-02T")


def test_the_text_block_is_signable_and_reads_back() -> None:
    digest = day_digest(trail(INSTANTS), site="montecasino", day=DAY, calendar=CALENDAR)
    text = digest_text(digest)
    lines = text.splitlines()
    assert lines[0] == "bonusd audit digest"
    for label, value in [
        ("site", "montecasino"),
        ("gaming day", "2026-10-03"),
        ("last seq", "4"),
        ("head hash", digest.head_hash),
        ("code", digest.code),
    ]:
        assert any(line.startswith(f"{label}:") and line.endswith(value) for line in lines)
    assert "signed: ______" in text and text.count("compliance officer") == 1
    assert read_digest(text) == digest
    quiet = day_digest([], site="montecasino", day=DAY, calendar=CALENDAR)
    assert read_digest(digest_text(quiet)) == quiet
    # typed from paper: the five lines a check needs
    typed = "\n".join(line for line in lines if line.split(":")[0] in PAPER)
    assert check_digest(trail(INSTANTS), read_digest(typed)).ok
    # the JSON of GET /audit/digest reads back too (its extra fields ignored)
    answer = {**digest.payload(), "intact": True, "recorded_seq": 9, "text": text}
    assert read_digest(json.dumps(answer)) == digest


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t, d: t.replace("code:", "kode:"), "not a digest, no code"),
        (lambda t, d: t.replace(d.code, d.code[::-1]), "does not match its head hash"),
        (lambda t, d: t.replace(d.head_hash, d.head_hash[:-1] + "x"), "64 hex digits"),
        (lambda t, d: t.replace("last seq:           4", "last seq:           four"), "not a"),
        (lambda t, d: "{not json", "not a digest"),
        (lambda t, d: "[1, 2]", "not a digest, no site, gaming day"),
    ],
)
def test_an_edited_or_foreign_digest_is_refused(edit: object, message: str) -> None:
    digest = day_digest(trail(INSTANTS), site="montecasino", day=DAY, calendar=CALENDAR)
    text = edit(digest_text(digest), digest)  # type: ignore[operator]
    with pytest.raises(AuditFormatError, match=message) as refused:
        read_digest(text, "digest-2026-10-03.txt")
    assert str(refused.value).startswith("digest-2026-10-03.txt: ")


def test_a_rehashed_chain_verifies_but_fails_the_check_against_the_digest() -> None:
    records = trail(INSTANTS)
    digest = day_digest(records, site="s", day=DAY, calendar=CALENDAR)
    untouched = check_digest(records, digest)
    assert untouched.ok, untouched
    assert "record 4 still has the digest's hash" in str(untouched)
    # the insider changes record 2 and re-hashes every record after it
    forged = rehashed(records, 2, {"n": 99})
    assert verify_chain(forged).ok  # the chain's own check cannot tell
    check = check_digest(forged, digest)
    assert not check.ok
    assert check.found == forged[3].hash != digest.head_hash
    assert str(check).startswith(
        f"site s, gaming day 2026-10-03, record 4 was rewritten: the digest says "
        f"{digest.head_hash}, the chain now holds {forged[3].hash}"
    )
    # a record rewritten after the digest's day leaves that digest whole
    assert check_digest(rehashed(records, 5, {"n": 99}), digest).ok


def test_a_shortened_or_broken_chain_fails_the_check() -> None:
    records = trail(INSTANTS)
    digest = day_digest(records, site="s", day=DAY, calendar=CALENDAR)
    short = check_digest(records[:3], digest)
    assert not short.ok and short.found is None
    assert "record 4 is missing: the chain ends before it" in str(short)
    edited = [*records[:1], records[1].__class__(**{**records[1].__dict__, "payload": {}})]
    broken = check_digest([*edited, *records[2:]], digest)
    assert not broken.ok and broken.found == digest.head_hash  # the head holds, a link not
    assert "chain broken at record 2" in str(broken)


def test_a_day_is_finished_a_settling_time_after_its_close() -> None:
    assert dt.timedelta(minutes=5) == SETTLE
    assert not is_finished(CALENDAR, DAY, local(4, 8, 4))
    assert is_finished(CALENDAR, DAY, local(4, 8, 5))
    assert last_finished_day(CALENDAR, local(4, 8, 4)) == dt.date(2026, 10, 2)
    assert last_finished_day(CALENDAR, local(4, 8, 5)) == DAY
    assert next_anchor_time(CALENDAR, local(4, 8, 2)) == local(4, 8, 5)
    assert next_anchor_time(CALENDAR, local(4, 8, 5)) == local(5, 8, 5)
    assert next_anchor_time(CALENDAR, local(3, 20)) == local(4, 8, 5)
    # is_finished and last_finished_day agree, across a day's turn
    for minute in range(0, 12):
        now = local(4, 8) + dt.timedelta(minutes=minute)
        for day in (dt.date(2026, 10, 2), DAY, dt.date(2026, 10, 4)):
            assert is_finished(CALENDAR, day, now) == (day <= last_finished_day(CALENDAR, now))
    assert (
        "closes at 08:00 the next morning (local time) and its digest is ready 5 minutes later"
        in not_over(CALENDAR, dt.date.max)
    )


def _damaged(records: list[AuditRecord]) -> dict[str, list[AuditRecord]]:
    """The trail as it is, and as four kinds of tampering leave it."""
    edited = dataclasses.replace(records[2], payload={"n": "changed"})  # not re-hashed
    return {
        "intact": records,
        "edited": [*records[:2], edited, *records[3:]],
        "missing": [*records[:1], *records[2:]],
        "swapped": [records[0], records[2], records[1], *records[3:]],
        "out of order": [*records[:3], dataclasses.replace(records[3], time=records[0].time)],
    }


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_a_digest_taken_a_batch_at_a_time_is_the_whole_trails(size: int) -> None:
    """What the leader's daily pass and `GET /audit/digest` do: the trail read a batch at
    a time gives the digest, and the chain's check, of the trail read whole, tampered
    or not, for every day it spans."""
    records = trail([*INSTANTS, local(4, 9), local(5, 7), local(5, 23)])
    for how, chain in _damaged(records).items():
        batches = [chain[at : at + size] for at in range(0, len(chain), size)]
        walk = ChainWalk()
        for batch in batches:
            walk.add(batch)
        assert walk.check == verify_chain(chain), how
        for day in (dt.date(2026, 10, n) for n in range(1, 7)):
            fold = DigestFold(site="s", day=day, calendar=CALENDAR)
            for batch in batches:
                fold.add(batch)
            assert fold.digest() == day_digest(chain, site="s", day=day, calendar=CALENDAR)
    assert not verify_chain(_damaged(records)["edited"]).ok


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_digests_checked_a_batch_at_a_time_as_the_whole_trail(size: int) -> None:
    """What `bonusd audit check-digest` does on the live trail: several digests checked in
    one pass a batch at a time give each digest's check of the trail read whole, on the
    intact trail and on every kind of tampering, beside a digest of a record past the end."""
    records = trail([*INSTANTS, local(4, 9), local(5, 7), local(5, 23)])
    days = [dt.date(2026, 10, n) for n in range(1, 6)]
    digests = [day_digest(records, site="s", day=day, calendar=CALENDAR) for day in days]
    digests.append(dataclasses.replace(digests[-1], last_seq=len(records) + 3))
    seen = set()
    for how, chain in _damaged(records).items():
        checks = DigestChecks(digests)
        for at in range(0, len(chain), size):
            checks.add(chain[at : at + size])
        got = checks.checks()
        assert got == [check_digest(chain, digest) for digest in digests], how
        seen.add(tuple(check.ok for check in got))
    assert len(seen) > 1  # the tampered trails fail where the intact one passes
