"""The views without I/O: which sections change, what the crew may do in each claim state
and at which time, what the signage counts down to. Real draw and RAPS books, driven by
their own (pure) commands."""

from __future__ import annotations

import datetime as dt

from bonusd.api.draws import CLAIM_ACTIONS
from bonusd.api.jackpots import RAPS_ACTIONS as API_RAPS_ACTIONS
from bonusd.draws.book import DrawBook, DrawPlan
from bonusd.draws.claims import Actor, ClaimRole
from bonusd.promotions import load_promotion
from bonusd.push.crewview import DRAW_ACTIONS, RAPS_ACTIONS, crew_events, crew_view
from bonusd.push.hub import PushStats, Stream, Subscriber
from bonusd.push.views import Inputs, diff, relevant_draws, signage_events, signage_view
from bonusd.raps.book import RapsBook
from bonusd.raps.plan import SessionPlan
from bonusd.raps.rules import FloorPlayer, PlayKind
from bonusd.raps.snapshot import FloorSnapshot
from tests.daemon_helpers import PROJECT

GH = load_promotion(PROJECT / "promotions" / "golden-horse-mega-points-chase.toml")
FESTA = load_promotion(PROJECT / "promotions" / "montecasino-festa-fortuna.toml")
SYSTEM, CREW, DESK = (
    Actor("s", ClaimRole.SYSTEM),
    Actor("c", ClaimRole.CREW),
    Actor("d", ClaimRole.DESK),
)
DRAW_AT = dt.datetime.combine(GH.draw("halfway").date, dt.time(19, 0), GH.zone)
SESSION = FESTA.jackpot_sessions[0]
JACKPOT_AT = dt.datetime.combine(SESSION.date, dt.time(14, 30), FESTA.zone)
CARDS = [f"60010{n:05d}" for n in range(12)]
NAMES = {c: f"Name{n} Surname{n}" for n, c in enumerate(CARDS)}


def halfway(at: dt.datetime = DRAW_AT, *, drawn: bool = True) -> DrawBook:
    book = DrawBook(DrawPlan.of(GH, GH.draw("halfway")))
    for n, key in enumerate(book.plan.keys):
        book.commit_round(key, bytes([n + 1]) * 32, at - dt.timedelta(hours=9))
    if drawn:
        book.close_bin({"pooled": dict.fromkeys(CARDS, 2)}, [], SYSTEM, at)
        book.run_round(1, SYSTEM, at)
    return book


def gh_inputs(book: DrawBook, now: dt.datetime) -> Inputs:
    return Inputs(
        now=now,
        zone=GH.zone,
        site="s",
        promotions=(GH,),
        draws={book.subject: book},
        names=NAMES,
    )


def test_the_action_tables_are_the_http_routes() -> None:
    def routes(table: dict[str, tuple[str, tuple[object, ...]]]) -> dict[str, tuple[str, set[str]]]:
        return {a: (seg, {str(r) for r in roles}) for a, (seg, roles) in table.items()}

    assert routes(DRAW_ACTIONS) == routes(CLAIM_ACTIONS)  # type: ignore[arg-type]
    assert routes(RAPS_ACTIONS) == routes(API_RAPS_ACTIONS)  # type: ignore[arg-type]


def test_draw_alerts_offer_what_the_state_and_the_clock_allow() -> None:
    book = halfway()
    alerts = crew_view(gh_inputs(book, DRAW_AT + dt.timedelta(seconds=10)))["alerts"]
    assert len(alerts) == 5 and {a["actions"][0] for a in alerts} == {"present"}
    assert [a["claim"] for a in alerts] == [1, 2, 3, 4, 5]  # same deadline: oldest first
    late = crew_view(gh_inputs(book, DRAW_AT + dt.timedelta(seconds=91)))["alerts"]
    assert {tuple(a["actions"]) for a in late} == {("no_show",)}
    book.act(1, "present", CREW, DRAW_AT + dt.timedelta(seconds=20))
    book.act(2, "present", CREW, DRAW_AT + dt.timedelta(seconds=20))
    book.act(2, "verify", CREW, DRAW_AT + dt.timedelta(seconds=30))
    now = DRAW_AT + dt.timedelta(seconds=40)
    view = crew_view(gh_inputs(book, now))
    by_claim = {a["claim"]: a for a in view["alerts"]}
    assert by_claim[1]["actions"] == ["verify"] and by_claim[1]["deadline"] is None
    assert by_claim[2]["actions"] == ["pick_reveal"]
    assert by_claim[2]["endpoints"]["pick_reveal"].endswith("/draws/halfway/claims/2/reveal")
    assert by_claim[3]["actions"] == ["present"]
    # urgency: the three still counting down first, then those presented or verified
    assert [a["claim"] for a in view["alerts"]] == [3, 4, 5, 1, 2]
    assert "presented" in by_claim[1]["announcement"]
    # a no-show leaves the alerts for "recent" and its redraw is a new alert
    after = DRAW_AT + dt.timedelta(seconds=95)
    book.act(3, "no_show", CREW, after)
    again = crew_view(gh_inputs(book, after))
    assert 3 not in {a["claim"] for a in again["alerts"]}
    assert 6 in {a["claim"] for a in again["alerts"]}
    assert again["recent"][0]["claim"] == 3 and again["recent"][0]["outcome"] == "no_show"
    cues = crew_events(view, again)
    assert {(e["kind"], e["claim"]) for e in cues} >= {("settled", 3), ("alert", 6)}


def test_raps_alerts_follow_the_crew_at_the_device() -> None:
    book = RapsBook(SessionPlan.of(FESTA, SESSION))
    book.commit_seeds(
        {n: bytes([n]) * 32 for n in book.jackpots}, JACKPOT_AT - dt.timedelta(hours=2)
    )
    book.sign_decline(CARDS[0], DESK, JACKPOT_AT - dt.timedelta(hours=1))
    players = [
        FloorPlayer(c, PlayKind.TABLE, "main", f"RT-{n}", "pit 1", 3, JACKPOT_AT, 90_000, "Q")
        for n, c in enumerate(CARDS[:1])
    ]
    book.select(1, FloorSnapshot.from_players(JACKPOT_AT, players), SYSTEM, JACKPOT_AT)

    def alert(now: dt.datetime) -> dict[str, object]:
        inputs = Inputs(
            now=now,
            zone=FESTA.zone,
            site="s",
            promotions=(FESTA,),
            sessions={book.subject: book},
            names=NAMES,
        )
        (one,) = crew_view(inputs)["alerts"]
        return one

    first = alert(JACKPOT_AT)
    assert first["actions"] == ["crew_arrived"] and first["seat"] == 3
    assert (first["device"], first["bank"], first["area"]) == ("RT-0", "pit 1", "main")
    assert first["announcement"] is None  # the crew goes to the device first, no PA yet
    t = JACKPOT_AT + dt.timedelta(seconds=15)
    book.act(1, "crew_arrived", CREW, t)
    assert alert(t)["actions"] == ["verify_at_device", "not_at_device"]  # too soon to reselect
    minute = JACKPOT_AT + dt.timedelta(seconds=30)  # the series' reselect_spacing_s
    assert alert(t)["reselections"] == {"left": 3, "allowed": 3, "from": minute.isoformat()}
    assert alert(minute)["actions"] == ["verify_at_device", "not_at_device", "not_owner"]
    book.act(1, "not_at_device", CREW, t)
    assert alert(t)["actions"] == ["announce"]
    book.act(1, "announce", CREW, t)
    called = alert(t)
    assert called["actions"] == ["present", "declined_register"]  # card 0 signed the register
    assert NAMES[CARDS[0]] in str(called["announcement"])
    assert called["deadline"] is not None
    later = alert(t + dt.timedelta(seconds=91))
    assert later["actions"] == ["declined_register"]  # signed: never reselected


def test_signage_counts_down_to_the_next_round_not_drawn() -> None:
    before = signage_view(gh_inputs(halfway(drawn=False), DRAW_AT - dt.timedelta(hours=1)), "main")
    assert before["next_draw"]["round"] == 1
    assert before["next_draw"]["commitment"] is not None
    assert before["multiplier"]["factor"] == 3
    after = signage_view(gh_inputs(halfway(), DRAW_AT + dt.timedelta(seconds=5)), "main")
    assert after["next_draw"]["round"] == 2
    assert len(after["announcements"]) == 5
    changed = diff(before, after)
    assert set(changed) == {"next_draw", "announcements", "upcoming"}
    cues = signage_events(before, after)
    assert [e["kind"] for e in cues] == ["winner"] * 5
    assert [e["claim"] for e in cues] == [1, 2, 3, 4, 5]
    closed = signage_view(gh_inputs(halfway(), DRAW_AT.replace(hour=21, second=1)), "main")
    assert closed["multiplier"] is None
    assert [e["kind"] for e in signage_events(after, closed)] == ["multiplier"]
    assert ("golden-horse-mega-points-chase", "halfway") in relevant_draws((GH,), DRAW_AT)


def test_a_stream_sends_only_what_changed_and_replays_from_its_ring() -> None:
    stream = Stream("signage:s:main", "main", ring=2)
    book = halfway(drawn=False)
    stream.advance(signage_view(gh_inputs(book, DRAW_AT), "main"), "t1")
    assert not stream.advance(signage_view(gh_inputs(book, DRAW_AT), "main"), "t2")
    sub = Subscriber(stream, 4, PushStats())
    stream.subscribers.add(sub)
    drawn = halfway()
    assert stream.advance(signage_view(gh_inputs(drawn, DRAW_AT), "main"), "t3")
    assert stream.seq == 2 and sub.queue.qsize() == 1
    assert stream.replay(stream.epoch, 1) == [stream.ring[-1]]
    assert stream.replay(stream.epoch, 0) is not None  # seq 1 is still in the ring
    assert stream.replay("other", 1) is None
    # overflow: dropped to one snapshot; a second overflow with nothing drained: kicked
    for _ in range(4):
        stream.ping("t4")
    assert sub.stats.resyncs == 1 and sub.queue.qsize() == 1
    assert sub.queue.get_nowait() is None  # a drained item resets the count
    sub.strikes = 0
    sub.queue.put_nowait(None)
    for _ in range(4):
        stream.ping("t5")
    assert not sub.kicked.is_set() and sub.stats.resyncs == 2
    for _ in range(4):
        stream.ping("t6")
    assert sub.kicked.is_set() and sub not in stream.subscribers and sub.stats.kicked == 1
