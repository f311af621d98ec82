"""What a kiosk token reads of a standing (`bonusd.promotions.kioskview`), against every kind of
reason the rules give: the kiosk body carries none of the reason or rule texts and no
personal data; a card that may not take part answers byte for byte like a card that is
no member (no existence oracle); the desk still reads every reason.

The Golden Horse seed is run with three changes so that one floor shows every kind: its
dates of birth are required, the halfway draw is closed to tier A, and tier Q is capped
at 25 halfway tickets. The festa seed's play-window kinds are checked on the pure rules.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.promotions import MemberWindowStats, SideStats, load_promotion, standing
from bonusd.promotions.kioskview import NOT_ELIGIBLE, KioskStatus, kiosk_standing
from bonusd.registry.records import Member
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto
from tests.daemon_helpers import PROJECT, SAST, Daemon, running
from tests.telemetry_helpers import Publisher, game

GH = "golden-horse-mega-points-chase"
HALFWAY = f"/promotions/{GH}/draws/halfway"
LAUNCH = f"/promotions/{GH}/draws/launch"
EXCLUSION = "Self-exclusion order (problem gambling) ref 123"
MEMBERS = f"""card,name,tier,app_user,date_of_birth,sms_opt_in,excluded,exclusion_reason,last_visit
1001,Thandi Mokoena,Q,true,1980-02-01,true,false,,
1002,Johan Botha,J,false,1975-06-30,false,false,,
1003,Sipho Ndlovu,K,false,1970-01-01,false,true,{EXCLUSION},
1004,Lerato Dlamini,J,false,2009-01-01,false,false,,
1005,Pieter Nel,K,false,,false,false,,
1006,Anele Zulu,A,false,1970-03-04,false,false,,
1007,Naledi Khumalo,J,false,1985-05-05,false,false,,
"""
NAMES = ("Thandi", "Mokoena", "Johan", "Botha", "Sipho", "Ndlovu", "Lerato", "Dlamini")
PERSONAL = (*NAMES, "Pieter", "Anele", "Naledi", "1980-02-01", "2009-01-01", "ref 123")
UNKNOWN = "9999"

# every text the rules give (bonusd/promotions/rules.py): reasons, then rule-line texts
REASON_KINDS = {
    "excluded": r"^excluded: ",
    "no date of birth": r"^no date of birth on record",
    "under age": r"^under \d+ on ",
    "tier not eligible": r"^tier \w+ is not eligible for this draw",
    "threshold not reached": r"^(slots|tables): [\d,]+ of [\d,]+ points$",
    "no gaming visit": r"^no gaming visit in the earning window",
    "no rated play": r"^no rated play on ",
    "not activated": r"^not activated: ",
}
DETAIL_KINDS = {
    "points": r"^(slots|tables): [\d,]+ points / ",
    "visits": r"gaming visit\(s\) x ",
    "base": r"free ticket\(s\)$",
    "app_bonus": r"^Tsogo Sun App user: ",
    "min_one": r"^rated play in the window: at least 1$",
    "cap": r"^tier \w+ cap ",
}


def at(month: int, day: int, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, month, day, hour, minute, tzinfo=SAST)


@pytest.fixture
def kiosk_settings(settings: Settings, tmp_path: Path, site: str) -> Settings:
    folder = tmp_path / "promotions"
    folder.mkdir()
    text = (PROJECT / "promotions" / f"{GH}.toml").read_text()
    changes = {
        'site = "golden-horse"': f'site = "{site}"',
        "require_date_of_birth = false": "require_date_of_birth = true",
        'tombolas = "pooled"              # DOMAIN.md: Halfway is one pooled draw': (
            'tombolas = "pooled"\ntiers = ["10", "J", "Q", "K"]\ncaps = { Q = 25 }'
        ),
    }
    for old, new in changes.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (folder / f"{GH}.toml").write_text(text)
    return settings.model_copy(update={"promotions": folder})


@pytest.fixture
def pub(broker: LocalMosquitto, site: str) -> Iterator[Publisher]:
    p = Publisher(broker, site)
    yield p
    p.close()


def _kinds(texts: list[str], kinds: dict[str, str]) -> set[str]:
    return {name for name, rx in kinds.items() for t in texts if re.search(rx, t)}


def _check_kiosk_body(raw: bytes, desk: dict[str, Any], unknown: httpx.Response) -> None:
    """No reason or rule text, no personal data, and the keys of the unknown-card answer."""
    text = raw.decode()
    for reason in desk["reasons"]:
        assert reason not in text
    for line in desk["breakdown"]:
        assert not line["detail"] or line["detail"] not in text
    for word in (*PERSONAL, "tier", "excluded", "reason", "detail", "name", "birth"):
        assert word not in text, word
    body, neutral = json.loads(raw), unknown.json()
    assert body.keys() == neutral.keys()
    assert body["per_tombola"].keys() == neutral["per_tombola"].keys()
    for line in body["breakdown"]:
        assert line.keys() == {"rule", "tombola", "side", "tickets"}


async def _play(d: Daemon, pub: Publisher) -> None:
    r = await d.http.post("/members/import", content=MEMBERS, headers={"content-type": "text/csv"})
    assert r.status_code == 200, r.text
    sent = pub.egm("EGM-1", game("1001", at(10, 3, 12), 10000, 1000))  # a launch-draw visit
    for n, card in enumerate(("1001", "1003", "1004", "1005", "1006", "1007")):
        sent += pub.egm(
            f"EGM-{n + 2}", *(game(card, at(10, 6, 20, i), 300000, 10000) for i in range(3))
        )
    sent += pub.egm("EGM-9", game("1002", at(10, 6, 21), 50000, 5000))
    await d.wait_committed(sent)


async def test_the_kiosk_reads_no_reason_and_cannot_tell_excluded_from_unknown(
    kiosk_settings: Settings, pub: Publisher
) -> None:
    clock = ManualClock(at(10, 10, 9))
    async with running(kiosk_settings, clock) as d:
        await _play(d, pub)
        clock.set(at(11, 7, 12))  # halfway's draw day: activation is open
        kiosk = await d.client(Role.KIOSK)
        desk = await d.client(Role.DESK)
        try:
            r = await kiosk.post(
                f"{HALFWAY}/activations", json={"card": "1007", "channel": "kiosk"}
            )
            assert r.status_code == 200, r.text

            reasons: list[str] = []
            details: list[str] = []
            statuses: dict[tuple[str, str], str] = {}
            for draw in (HALFWAY, LAUNCH):
                unknown = await kiosk.get(f"{draw}/standings/{UNKNOWN}")
                assert unknown.status_code == 200, unknown.text
                assert unknown.json()["status"] == KioskStatus.NOT_ELIGIBLE
                assert unknown.json()["message"] == NOT_ELIGIBLE
                # the desk is told plainly that the card is no member
                assert (await desk.get(f"{draw}/standings/{UNKNOWN}")).status_code == 404
                for card in ("1001", "1002", "1003", "1004", "1005", "1006", "1007"):
                    full = await desk.get(f"{draw}/standings/{card}")
                    assert full.status_code == 200, full.text
                    seen = full.json()
                    reasons += seen["reasons"]
                    details += [x["detail"] for x in seen["breakdown"]]
                    answer = await kiosk.get(f"{draw}/standings/{card}")
                    assert answer.status_code == 200, answer.text
                    _check_kiosk_body(answer.content, seen, unknown)
                    statuses[draw.rsplit("/", 1)[1], card] = answer.json()["status"]
                    if not seen["eligible"]:
                        assert answer.content == unknown.content, card
                        assert answer.headers["content-length"] == unknown.headers["content-length"]
                        assert answer.headers["content-type"] == unknown.headers["content-type"]
                    else:
                        assert answer.json()["tickets"] == seen["tickets"]
                        assert answer.json()["entries"] == seen["entries"]

            # the desk read every kind this floor can show (play-window kinds: below)
            assert _kinds(reasons, REASON_KINDS) == set(REASON_KINDS) - {"no rated play"}
            assert _kinds(details, DETAIL_KINDS) == set(DETAIL_KINDS) - {"min_one"}
            assert EXCLUSION in " ".join(reasons)  # the desk keeps the whole reason
            assert statuses == {
                ("halfway", "1001"): "not_activated",  # capped at 25 (tier Q)
                ("halfway", "1002"): "no_tickets",  # 5,000 of 20,000 points
                ("halfway", "1003"): "not_eligible",  # excluded
                ("halfway", "1004"): "not_eligible",  # under 18 on 07 Nov 2026
                ("halfway", "1005"): "not_eligible",  # no date of birth
                ("halfway", "1006"): "not_eligible",  # tier A: not this draw
                ("halfway", "1007"): "entered",
                ("launch", "1001"): "not_activated",  # base, a visit, the app bonus
                ("launch", "1002"): "no_tickets",  # no gaming visit in the window
                ("launch", "1003"): "not_eligible",
                ("launch", "1004"): "not_eligible",
                ("launch", "1005"): "not_eligible",
                ("launch", "1006"): "no_tickets",  # tier A may take part in the launch
                ("launch", "1007"): "no_tickets",
            }
            capped = (await kiosk.get(f"{HALFWAY}/standings/1001")).json()
            assert capped["tickets"] == 25
            assert [x["rule"] for x in capped["breakdown"]] == ["points", "visits", "cap"]
        finally:
            await kiosk.aclose()
            await desk.aclose()


def _member(**fields: Any) -> Member:
    return Member(**{"card": "C1", "name": "Thandi Mokoena", "tier": "J", **fields})


def test_play_window_kinds_and_every_pure_case_hide_their_texts() -> None:
    """The festa seed's play-window draws (no rated play, at least one ticket, a tier
    group cap, a draw closed to some tiers), on the pure rules: the kiosk view carries none
    of the texts, and every card that may not take part equals the no-member answer."""
    festa = load_promotion(PROJECT / "promotions" / "montecasino-festa-fortuna.toml")
    played = SideStats(points=40, plays=3, visits=1)
    big = SideStats(points=9_000_000, plays=90, visits=1)
    cases = [
        (_member(), MemberWindowStats()),
        (_member(), MemberWindowStats(slots=played, visits=1)),
        (_member(tier="K", app_user=True), MemberWindowStats(slots=big, visits=1)),
        (_member(tier="10", app_user=True), MemberWindowStats(tables=big, visits=1)),
        (
            _member(excluded=True, exclusion_reason=EXCLUSION),
            MemberWindowStats(slots=big, visits=1),
        ),
        (_member(date_of_birth=dt.date(2010, 1, 1)), MemberWindowStats(slots=big, visits=1)),
    ]
    reasons: list[str] = []
    details: list[str] = []
    for draw in festa.draw_list:
        neutral = json.dumps(kiosk_standing(festa.id, draw, None))
        for member, stats in cases:
            s = standing(festa, draw, member, stats, activated=False)
            reasons += s.reasons
            details += [line.detail for line in s.breakdown]
            view = kiosk_standing(festa.id, draw, s)
            text = json.dumps(view, ensure_ascii=False)
            assert not any(r in text for r in s.reasons)
            assert not any(line.detail and line.detail in text for line in s.breakdown)
            assert "Thandi" not in text and "ref 123" not in text and "2010" not in text
            if not s.eligible:
                assert json.dumps(view) == neutral
            else:
                assert view.keys() == json.loads(neutral).keys()
    assert {"no rated play", "excluded", "under age", "tier not eligible"} <= _kinds(
        reasons, REASON_KINDS
    )
    assert {"min_one", "cap", "app_bonus"} <= _kinds(details, DETAIL_KINDS)
