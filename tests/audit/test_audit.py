"""The hash-chained audit log, its JSON Lines form, the auditor's rebuild and the report."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import itertools
import json

import pytest

from bonusd.audit.chain import (
    GENESIS,
    NOT_A_RECORD,
    AuditLog,
    AuditRecord,
    ChainWalk,
    Kind,
    canonical_json,
    from_jsonl,
    record_hash,
    to_jsonl,
    verify_chain,
)
from bonusd.draws.claims import Actor, ClaimRole, DrawClaim, LetterBook, Prize
from bonusd.draws.evidence import (
    claim_payload,
    commitment_payload,
    draw_report,
    evidence,
    manual_pick_payload,
    pick_payload,
    pool_payload,
    seed_payload,
)
from bonusd.draws.fairness import Pool
from bonusd.draws.poolfile import parse_pool
from bonusd.draws.rounds import DrawRounds
from bonusd.errors import AuditFormatError

SAST = dt.timezone(dt.timedelta(hours=2))
T0 = dt.datetime(2026, 11, 7, 18, 0, tzinfo=SAST)
CREW = Actor("thandi", ClaimRole.CREW)
DESK = Actor("pieter", ClaimRole.DESK)


def clock() -> itertools.count[int]:
    return itertools.count()


def log_of(n: int) -> AuditLog:
    log = AuditLog()
    for i in range(n):
        log.append(
            at=T0 + dt.timedelta(seconds=i), actor="desk", kind=Kind.RULE_CHANGE, payload={"i": i}
        )
    return log


def test_records_chain_by_hash() -> None:
    log = log_of(3)
    first, second, _ = log.records
    assert first.seq == 1
    assert first.prev_hash == GENESIS
    assert second.prev_hash == first.hash
    assert first.time == "2026-11-07T16:00:00.000000Z"
    body = canonical_json(first.body())
    assert body.startswith(b'{"actor":"desk","kind":"rule_change","payload":{"i":0}')
    assert first.hash == hashlib.sha256(body).hexdigest()
    assert verify_chain(log.records).ok
    assert str(verify_chain(log.records)) == "chain intact: 3 records"


def test_verify_chain_finds_a_modified_record() -> None:
    records = log_of(5).records
    records[2] = dataclasses.replace(records[2], payload={"i": 99})
    check = verify_chain(records)
    assert check.broken_at == 3
    assert "modified" in check.reason
    assert "chain broken at record 3" in str(check)


def test_verify_chain_finds_a_rehashed_record_by_its_successor() -> None:
    records = log_of(5).records
    forged = dataclasses.replace(records[1], payload={"i": 42})
    forged = dataclasses.replace(
        forged, hash=hashlib.sha256(canonical_json(forged.body())).hexdigest()
    )
    records[1] = forged
    check = verify_chain(records)
    assert check.broken_at == 3
    assert "prev_hash" in check.reason


def test_verify_chain_finds_removed_and_reordered_records() -> None:
    records = log_of(5).records
    assert verify_chain(records[:2] + records[3:]).broken_at == 3
    assert verify_chain([records[1], records[0], *records[2:]]).broken_at == 1


def test_jsonl_round_trip_and_resume() -> None:
    log = log_of(4)
    text = to_jsonl(log.records)
    assert len(text.splitlines()) == 4
    assert json.loads(text.splitlines()[0])["hash"] == log.records[0].hash
    back = from_jsonl(text)
    assert back == log.records
    resumed = AuditLog(back)
    rec = resumed.append(at=T0 + dt.timedelta(hours=1), actor="x", kind=Kind.OVERRIDE, payload={})
    assert rec.seq == 5
    assert verify_chain(resumed.records).ok
    with pytest.raises(AuditFormatError, match="line 2"):
        from_jsonl(text.splitlines()[0] + "\n{not json\n")
    tampered = [*back[:1], dataclasses.replace(back[1], actor="mallory"), *back[2:]]
    with pytest.raises(AuditFormatError, match="broken"):
        AuditLog(tampered)


def test_records_refuse_floats_and_backwards_time() -> None:
    log = AuditLog()
    with pytest.raises(TypeError, match="floats"):
        log.append(at=T0, actor="a", kind=Kind.OVERRIDE, payload={"x": 1.5})
    log.append(at=T0, actor="a", kind=Kind.OVERRIDE, payload={})
    with pytest.raises(ValueError, match="older"):
        log.append(at=T0 - dt.timedelta(seconds=1), actor="a", kind=Kind.OVERRIDE, payload={})
    assert (
        canonical_json({"b": "é", "a": [1, True, None]}) == '{"a":[1,true,null],"b":"é"}'.encode()
    )


def test_pool_files_parse_back_exactly() -> None:
    pool = Pool.freeze("gh-bonus", "main", {"C2": 5, "C1": 3}, round_no=2)
    again = parse_pool(pool.serialise())
    assert again.commitment == pool.commitment
    assert again.cards == pool.cards
    with pytest.raises(AuditFormatError, match="header counts"):
        parse_pool(pool.serialise().replace(b"C2:5", b"C2:6"))
    with pytest.raises(AuditFormatError):
        parse_pool(b"something else\n")


def run_draw() -> tuple[DrawRounds, AuditLog, dict[str, Pool]]:
    """A Halfway-style draw with two rounds, a no-show, a redraw, all recorded."""
    counter = itertools.count(1)
    d = DrawRounds("gh-halfway", seed_source=lambda n: next(counter).to_bytes(n, "big"))
    log, tick = AuditLog(), itertools.count()

    def rec(kind: Kind, payload: dict[str, object], actor: str = "system") -> None:
        log.append(
            at=T0 + dt.timedelta(seconds=next(tick)), actor=actor, kind=kind, payload=payload
        )

    pools: dict[str, Pool] = {}
    entries = {f"M{i:03d}": 1 + i % 4 for i in range(40)}
    book = LetterBook("GH")
    for r in (1, 2):
        rec(Kind.COMMITMENT, commitment_payload(d.draw_id, ("main", r), d.open_round("main", r, 3)))
    d.exclude("M005")
    rec(Kind.EXCLUSION, {"draw_id": d.draw_id, "card": "M005"}, "desk")
    for r in (1, 2):
        pool = d.freeze("main", r, entries)
        pools[pool.commitment] = parse_pool(pool.serialise())  # the archived file
        rec(Kind.POOL, pool_payload(pool))
        picks = d.draw("main", r)
        for pick in picks:
            rec(Kind.PICK, pick_payload(pool, pick))
        reveals = d.reveals("main", r, [Prize("R1,000", 100_000)] * 6)
        prize_rows = [["R1,000", 100_000]] * 6
        facts = {"prizes": prize_rows, "reveals_commitment": reveals.commitment}
        rec(Kind.PRIZES, {"draw_id": d.draw_id, "tombola": "main", "round": r} | facts)
        while picks:
            pick = picks.pop(0)
            announced = T0 + dt.timedelta(seconds=next(tick))
            claim = DrawClaim(
                len(log.records), draw_id=d.draw_id, card=pick.card, announced_at=announced,
                actor=Actor("system", ClaimRole.SYSTEM), draw_at=T0,
            )  # fmt: skip
            where = {"tombola": "main", "round": str(r), "pick": str(pick.number)}
            created = dataclasses.replace(claim.history[0], detail=where)
            rec(Kind.CLAIM, claim_payload(d.draw_id, pick.card, created))
            if r == 1 and pick.number == 2:
                move = claim.no_show(CREW, announced + dt.timedelta(seconds=91))
                rec(Kind.CLAIM, claim_payload(d.draw_id, pick.card, move), "thandi")
                alternate = d.redraw("main", 1)
                rec(Kind.REDRAW, pick_payload(pool, alternate))
                picks.append(alternate)
                continue
            later = [announced + dt.timedelta(seconds=s) for s in (30, 40, 50, 60)]
            moves = [
                claim.present(CREW, later[0]),
                claim.verify(CREW, later[1], id_ok=True, receipt_ok=True),
                claim.pick_reveal(CREW, later[2], reveals, pick.number),
            ]
            claim.issue_letter(DESK, later[3], book)
            for move in [*moves, claim.history[-1]]:
                rec(Kind.CLAIM, claim_payload(d.draw_id, pick.card, move), str(move.actor))
    for r in (1, 2):
        rec(Kind.SEED_REVEAL, seed_payload(d.draw_id, ("main", r), d.reveal_seed("main", r)))
    return d, log, pools


def test_an_auditor_rebuilds_and_verifies_the_draw_from_the_records() -> None:
    d, log, pools = run_draw()
    records = from_jsonl(to_jsonl(log.records))
    assert verify_chain(records).ok
    ev = evidence(records, "gh-halfway", pools)
    assert [r.key for r in ev.rounds] == [("main", 1), ("main", 2)]
    assert ev.order == d.order
    assert ev.excluded == {"M005"}
    result = ev.verify()
    assert all(v.ok for v in result.values()), result
    assert [v.picks_checked for v in result.values()] == [4, 3]


def test_the_auditor_detects_a_swapped_winner_and_a_doctored_pool_file() -> None:
    _, log, pools = run_draw()
    records = list(log.records)
    i = next(n for n, r in enumerate(records) if r.kind == Kind.PICK)
    other = next(c for c in next(iter(pools.values())).cards if c not in to_jsonl(records))
    records[i] = dataclasses.replace(records[i], payload=records[i].payload | {"card": other})
    assert verify_chain(records).broken_at == i + 1  # the chain shows the edit...
    result = evidence(records, "gh-halfway", pools).verify()
    bad, *trail = result[("main", 1)].mismatches  # ...and so does the recomputation
    assert (bad.what, bad.pick) == ("pick", 1)
    assert other in bad.recorded
    assert [m.what for m in trail] == ["trail"]  # and the claim no longer matches its pick
    assert "is not the card of main round 1 pick 1" in str(trail[0])
    commitment, pool = next(iter(pools.items()))
    entries = dict(zip(pool.cards, pool.tickets.tolist(), strict=True)) | {"M000": 40}
    doctored = {commitment: Pool.freeze(pool.draw_id, pool.tombola, entries, round_no=1)}
    result = evidence(log.records, "gh-halfway", pools | doctored).verify()
    assert result[("main", 1)].mismatches[0].what == "pool"


def test_draw_report_lists_picks_outcomes_exceptions_and_overrides() -> None:
    _, log, _ = run_draw()
    log.append(
        at=T0 + dt.timedelta(hours=1), actor="manager", kind=Kind.RULE_CHANGE,
        payload={"rule": "claim_time_s", "from": 90, "to": 120},
    )  # fmt: skip
    report = draw_report(log.records, "gh-halfway")
    assert report.chain.ok
    assert len(report.commitments) == 4  # two seeds, two pools
    assert [p.how for p in report.picks] == ["pick"] * 3 + ["redraw"] + ["pick"] * 3
    assert [p.outcome for p in report.picks].count("no_show") == 1
    assert [p.outcome for p in report.picks].count("letter_issued") == 6
    assert any("redraw, pick 4" in x for x in report.exceptions)
    assert any("no_show" in x for x in report.exceptions)
    assert any("exclusion" in x for x in report.overrides)
    assert any("rule change" in x and "claim_time_s" in x for x in report.overrides)
    text = report.render()
    assert text.startswith("DRAW REPORT gh-halfway\naudit chain: chain intact")
    assert "PICKS IN DRAW ORDER" in text
    assert "main r1 #4" in text
    print("\n" + text)


def test_manual_picks_are_recorded_and_reported() -> None:
    d = DrawRounds("gh-final")
    d.open_round("slots", 1, 5, manual=True)
    d.freeze("slots", 1, {"A": 2, "B": 1})
    pick = d.accept_ticket("slots", 1, 3)
    log = AuditLog()
    log.append(
        at=T0,
        actor="desk",
        kind=Kind.PICK,
        payload=manual_pick_payload(d.draw_id, ("slots", 1), pick),
    )
    report = draw_report(log.records, "gh-final")
    assert [(p.how, p.card, p.ticket) for p in report.picks] == [("manual", "B", 3)]
    ev = evidence(log.records, "gh-final", {})
    assert ev.manual == {("slots", 1): [pick]}
    assert ev.rounds == []


def test_audit_record_is_plain_data() -> None:
    rec = log_of(1).records[0]
    assert isinstance(rec, AuditRecord)
    assert json.loads(rec.to_json()) == {**rec.body(), "hash": rec.hash}


def test_missing_evidence_fails_instead_of_passing_silently() -> None:
    _, log, pools = run_draw()
    result = evidence(log.records, "gh-halfway", {}).verify()
    assert set(result) == {("main", 1), ("main", 2)}
    assert all(v.mismatches[0].recorded == "no pool file" for v in result.values())
    no_seeds = [r for r in log.records if r.kind != Kind.SEED_REVEAL]
    result = evidence(no_seeds, "gh-halfway", pools).verify()
    assert not any(v.ok for v in result.values())
    assert result[("main", 1)].mismatches[0].recorded == "no seed_reveal record"


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_a_unicode_line_separator_in_a_payload_survives_the_export(separator: str) -> None:
    """Canonical JSON keeps U+2028, U+2029 and U+0085 unescaped; the export ends records
    with "\\n" only, so reading it back does not cut a record inside a string."""
    log = AuditLog()
    note = f"refused entry{separator}see the register"
    log.append(at=T0, actor="desk", kind=Kind.EXCLUSION, payload={"card": "1", "note": note})
    log.append(at=T0, actor="desk", kind=Kind.OVERRIDE, payload={})
    back = from_jsonl(to_jsonl(log.records))
    assert [r.payload.get("note") for r in back] == [note, None]
    assert verify_chain(back).ok


@pytest.mark.parametrize(
    "field",
    [{"payload": ["x"]}, {"time": 5}, {"seq": "2"}, {"seq": True}, {"payload": {"n": 1.5}}],
)
def test_a_record_of_the_wrong_form_breaks_the_chain_there_and_the_check_goes_on(
    field: dict[str, object],
) -> None:
    log = AuditLog()
    for n in range(3):
        at = dt.datetime(2026, 10, 3, 20, n, tzinfo=dt.UTC)
        log.append(at=at, actor="desk", kind=Kind.PICK, payload={"n": n})
    first, second, third = log.records
    odd = dataclasses.replace(second, **field)  # type: ignore[arg-type]
    with contextlib.suppress(TypeError):  # hashed as it is, where canonical JSON can
        odd = dataclasses.replace(odd, hash=record_hash(odd.body()))
    check = verify_chain([first, odd, third])
    assert check.broken_at == 2
    assert check.reason in (NOT_A_RECORD, "hash does not match the record's content (modified)")


def test_an_archive_starting_with_a_bad_record_is_broken_where_it_starts() -> None:
    log = AuditLog()
    for n in range(7):
        at = dt.datetime(2026, 10, 3, 20, n, tzinfo=dt.UTC)
        log.append(at=at, actor="desk", kind=Kind.PICK, payload={"n": n})
    fifth = dataclasses.replace(log.records[4], payload=["x"])  # type: ignore[arg-type]
    walk = ChainWalk(anywhere=True)  # an archive whose first months were deleted
    walk.add([fifth, *log.records[5:]])
    assert (walk.check.broken_at, walk.check.reason) == (5, NOT_A_RECORD)
