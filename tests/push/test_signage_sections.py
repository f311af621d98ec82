"""The signage sections of the attract loop and the RAPS celebration, without I/O: the
promotion's look and how to enter (from its file), what is coming up in a screen's area
(draw rounds not drawn, today's jackpots not run, with prizes as people read them), and a
won jackpot's instant, which only the screens of the session's areas get. Real draw and
RAPS books, driven by their own (pure) commands."""

from __future__ import annotations

import datetime as dt

from bonusd.draws.book import DrawBook, DrawPlan
from bonusd.draws.claims import Actor, ClaimRole
from bonusd.draws.rounds import Prize
from bonusd.promotions import load_promotion, parse_promotion
from bonusd.push.attract import how_to_enter, promotion_section
from bonusd.push.views import Inputs, signage_events, signage_view
from bonusd.raps.book import RapsBook
from bonusd.raps.plan import SessionPlan
from bonusd.raps.rules import FloorPlayer, PlayKind
from bonusd.raps.snapshot import FloorSnapshot
from tests.daemon_helpers import PROJECT

GH_FILE = PROJECT / "promotions" / "golden-horse-mega-points-chase.toml"
GH = load_promotion(GH_FILE)
FESTA = load_promotion(PROJECT / "promotions" / "montecasino-festa-fortuna.toml")
SYSTEM, CREW = Actor("s", ClaimRole.SYSTEM), Actor("c", ClaimRole.CREW)
DRAW_AT = dt.datetime.combine(GH.draw("halfway").date, dt.time(19, 0), GH.zone)
SESSION = FESTA.jackpot_sessions[0]
JACKPOT_AT = dt.datetime.combine(SESSION.date, dt.time(14, 30), FESTA.zone)
CARDS = [f"60010{n:05d}" for n in range(6)]
NAMES = {c: f"Name{n} Surname{n}" for n, c in enumerate(CARDS)}


def festa_inputs(book: RapsBook, now: dt.datetime) -> Inputs:
    return Inputs(
        now=now,
        zone=FESTA.zone,
        site="s",
        promotions=(FESTA,),
        sessions={book.subject: book},
        names=NAMES,
    )


def session_book() -> RapsBook:
    book = RapsBook(SessionPlan.of(FESTA, SESSION))
    book.commit_seeds(
        {n: bytes([n]) * 32 for n in book.jackpots}, JACKPOT_AT - dt.timedelta(hours=2)
    )
    return book


def test_the_promotion_section_carries_its_look_and_how_to_enter() -> None:
    plain = promotion_section(GH)
    assert plain is not None
    assert plain["title"] == GH.name and plain["logo"] is None
    assert plain["colours"]["accent"] == "#ffc93c" and plain["colours"]["on_accent"] == "#10131c"
    assert plain["how_to_enter"] == how_to_enter(GH)
    assert "Activate your entries at any eHost or in the app" in plain["how_to_enter"]
    assert plain["how_to_enter"][-1] == "Drawn? Present yourself within 90 seconds with your ID"
    festa_steps = how_to_enter(FESTA)
    assert "Weekly Bonus Jackpot: spend R100 today and be carded in when it drops" in festa_steps
    branded = parse_promotion(
        GH_FILE.read_text(encoding="utf-8")
        + '\n[signage]\ntitle = "Chase!"\nlogo = "gh.png"\nhow_to_enter = ["Activate at any eHost"]\n'
        + 'colours = { accent = "#e23b3b" }\n',
        source="gh.toml",
    )
    shown = promotion_section(branded)
    assert shown is not None
    assert shown["title"] == "Chase!" and shown["name"] == GH.name
    assert shown["logo"] == f"/signage/logo/{GH.id}"
    assert shown["how_to_enter"] == ["Activate at any eHost"]
    assert shown["colours"]["accent"] == "#e23b3b"
    assert promotion_section(None) is None


def test_coming_up_lists_rounds_not_drawn_with_their_prizes() -> None:
    book = DrawBook(DrawPlan.of(GH, GH.draw("halfway")))
    for n, key in enumerate(book.plan.keys):
        book.commit_round(key, bytes([n + 1]) * 32, DRAW_AT - dt.timedelta(hours=9))
    book.load_prizes(
        ("pooled", 2), (Prize("R10,000", 1_000_000), Prize("R500", 50_000)), SYSTEM, DRAW_AT
    )
    inputs = Inputs(
        now=DRAW_AT - dt.timedelta(minutes=1),
        zone=GH.zone,
        site="s",
        promotions=(GH,),
        draws={book.subject: book},
    )
    rows = signage_view(inputs, "main")["upcoming"]
    draws = [r for r in rows if r["kind"] == "draw"]
    assert [(r["draw"], r["round"]) for r in draws[:3]] == [
        ("halfway", 1),
        ("halfway", 2),
        ("halfway", 3),
    ]
    assert draws[0]["at"] == DRAW_AT.isoformat() and draws[0]["winners"] == 5
    assert draws[0]["top_prize_cents"] is None  # the desk has not loaded round 1's values
    assert draws[1]["top_prize_cents"] == 1_000_000
    assert len(rows) <= 6 and [r["at"] for r in rows] == sorted(r["at"] for r in rows)
    book.close_bin({"pooled": dict.fromkeys(CARDS, 2)}, [], SYSTEM, DRAW_AT)
    book.run_round(1, SYSTEM, DRAW_AT)
    after = Inputs(
        now=DRAW_AT, zone=GH.zone, site="s", promotions=(GH,), draws={book.subject: book}
    )
    assert signage_view(after, "main")["upcoming"][0]["round"] == 2  # round 1 drawn


def test_jackpots_come_up_and_are_won_only_in_their_areas() -> None:
    book = session_book()
    before = festa_inputs(book, JACKPOT_AT - dt.timedelta(minutes=1))
    main = signage_view(before, "main")
    jackpots = [r for r in main["upcoming"] if r["kind"] == "jackpot"]
    assert jackpots[0]["number"] == 1 and jackpots[0]["at"] == JACKPOT_AT.isoformat()
    assert jackpots[0]["name"] == SESSION.name
    other = signage_view(before, "garden")
    assert other["jackpot"] is None
    assert not [r for r in other["upcoming"] if r["kind"] == "jackpot"]
    players = [
        FloorPlayer(CARDS[0], PlayKind.TABLE, "main", "RT-1", "pit 1", 3, JACKPOT_AT, 90_000, "Q")
    ]
    book.select(1, FloorSnapshot.from_players(JACKPOT_AT, players), SYSTEM, JACKPOT_AT)
    alerted = signage_view(festa_inputs(book, JACKPOT_AT), "main")
    assert alerted["jackpot"]["state"] == "alerted" and alerted["jackpot"]["won_at"] is None
    won_at = JACKPOT_AT + dt.timedelta(seconds=40)
    book.act(1, "crew_arrived", CREW, JACKPOT_AT + dt.timedelta(seconds=20))
    book.act(1, "verify_at_device", CREW, won_at)
    for area in ("main", "smoking"):
        won = signage_view(festa_inputs(book, won_at), area)
        assert won["jackpot"]["state"] == "won"
        assert won["jackpot"]["won_at"] == won_at.isoformat()
        assert won["jackpot"]["winner"] == {"name": "N. S****", "card": "****0000"}
        cues = signage_events(alerted, won)
        assert [(c["kind"], c["state"]) for c in cues] == [("jackpot", "won")]
        assert 1 not in [r.get("number") for r in won["upcoming"] if r["kind"] == "jackpot"]
    assert signage_view(festa_inputs(book, won_at), "garden")["jackpot"] is None
