"""RAPS: eligibility with reasons, the verifiable pick, reselection, the claim, the register."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
from collections import Counter
from collections.abc import Callable

import pytest
from scipy import stats

from bonusd.draws.claims import (
    Actor,
    ClaimRole,
    DeadlineError,
    RegisterError,
    RoleError,
    TransitionError,
)
from bonusd.draws.fairness import pick_sequence
from bonusd.draws.verify import verify
from bonusd.raps.rules import (
    DeclineRegister,
    EmptyPool,
    FloorPlayer,
    IneligibleReason,
    Jackpot,
    PlayKind,
    RapsClaim,
    RapsClaimState,
    RapsError,
    RapsPick,
    RapsRules,
    eligibility,
)

SAST = dt.timezone(dt.timedelta(hours=2))
JACKPOT_AT = dt.datetime(2025, 10, 4, 14, 30, tzinfo=SAST)
CREW = Actor("lerato", ClaimRole.CREW)
DESK = Actor("desk-1", ClaimRole.DESK)
SYSTEM = Actor("scheduler", ClaimRole.SYSTEM)
RULES = RapsRules()
R = RapsClaimState


def player(card: str, **kw: object) -> FloorPlayer:
    base = FloorPlayer(
        card=card,
        kind=PlayKind.EGM,
        area="main",
        device=f"EGM-{card}",
        bank="B12",
        seat=None,
        last_play=JACKPOT_AT - dt.timedelta(minutes=1),
        spend_cents=25_000,
        tier="Q",
    )
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


def floor() -> list[FloorPlayer]:
    return [
        player("OK1"),
        player("OK2", kind=PlayKind.TABLE, device="RL-03", seat=4, area="smoking"),
        player("PRIVE", area="prive"),
        player("IDLE", last_play=JACKPOT_AT - dt.timedelta(minutes=5, seconds=1)),
        player("EDGE", last_play=JACKPOT_AT - dt.timedelta(minutes=5)),
        player("CHEAP", spend_cents=9_999),
        player("EXACT", spend_cents=10_000),
        player("BANNED", excluded=True, spend_cents=0),
        player("WON"),
    ]


def test_eligibility_gives_every_reason() -> None:
    elig = eligibility(floor(), at=JACKPOT_AT, rules=RULES, previous_winners={"WON"})
    assert [p.card for p in elig.eligible] == ["EDGE", "EXACT", "OK1", "OK2"]
    reasons = {i.player.card: i.reasons for i in elig.ineligible}
    assert reasons == {
        "PRIVE": (IneligibleReason.OUTSIDE_AREAS,),
        "IDLE": (IneligibleReason.NOT_ACTIVE,),
        "CHEAP": (IneligibleReason.BELOW_MIN_SPEND,),
        "BANNED": (IneligibleReason.EXCLUDED, IneligibleReason.BELOW_MIN_SPEND),
        "WON": (IneligibleReason.PREVIOUS_WINNER,),
    }
    assert elig.player("OK2").location == "RL-03 seat 4, bank B12, smoking"


def test_tier_rule_and_duplicate_cards() -> None:
    snapshot = [
        player("J1", tier="J"),
        player("A1", tier="A"),
        player("TWICE", device="EGM-1", last_play=JACKPOT_AT - dt.timedelta(minutes=3)),
        player("TWICE", device="EGM-2", last_play=JACKPOT_AT - dt.timedelta(minutes=2)),
    ]
    rules = dataclasses.replace(RULES, tiers=frozenset({"J", "Q"}))
    elig = eligibility(snapshot, at=JACKPOT_AT, rules=rules)
    assert [(p.card, p.device) for p in elig.eligible] == [("J1", "EGM-J1"), ("TWICE", "EGM-2")]
    assert {(i.player.card, i.reasons) for i in elig.ineligible} == {
        ("A1", (IneligibleReason.TIER,)),
        ("TWICE", (IneligibleReason.DUPLICATE,)),
    }
    with pytest.raises(ValueError, match="aware"):
        eligibility(snapshot, at=JACKPOT_AT.replace(tzinfo=None), rules=rules)


def seeded(i: int) -> Callable[[int], bytes]:
    return lambda n: i.to_bytes(n, "big")


def test_selection_is_verifiable_and_reselection_is_the_next_pick() -> None:
    elig = eligibility(floor(), at=JACKPOT_AT, rules=RULES, previous_winners={"WON"})
    jackpot = Jackpot("ff-2025-10-04-1430", seed_source=seeded(42))
    commitment = jackpot.seed_commitment  # published before the instant
    with pytest.raises(RapsError, match="secret"):
        jackpot.reveal_seed()
    first = jackpot.select(elig)
    assert isinstance(first, RapsPick)
    second = jackpot.reselect()
    assert isinstance(second, RapsPick)
    assert second.player.card != first.player.card
    assert jackpot.pool is not None
    seed = jackpot.reveal_seed()
    assert [p.card for p in pick_sequence(jackpot.pool, seed, 2)] == [
        first.player.card,
        second.player.card,
    ]
    result = verify(
        jackpot.pool,
        seed,
        seed_commitment=commitment,
        pool_commitment=jackpot.pool.commitment,
        picks=jackpot.picks,
    )
    assert result.ok
    with pytest.raises(RapsError, match="already selected"):
        jackpot.select(elig)


def test_selection_is_uniform_over_the_eligible() -> None:
    elig = eligibility(floor(), at=JACKPOT_AT, rules=RULES)
    wins: Counter[str] = Counter()
    for i in range(4000):
        pick = Jackpot(f"j{i}", seed_source=seeded(i)).select(elig)
        assert isinstance(pick, RapsPick)
        wins[pick.player.card] += 1
    assert set(wins) == {p.card for p in elig.eligible}
    chi2, p = stats.chisquare(list(wins.values()))
    print(f"\nRAPS uniformity: {dict(wins)} chi2={chi2:.2f} p={p:.4f}")
    assert p > 0.001


def test_empty_pool_and_running_out_are_results() -> None:
    nobody = eligibility([player("X", area="prive")], at=JACKPOT_AT, rules=RULES)
    result = Jackpot("j1", seed_source=seeded(1)).select(nobody)
    assert isinstance(result, EmptyPool)
    assert (result.eligible, result.ineligible) == (0, 1)
    assert "no eligible player left" in str(result)
    one = eligibility([player("ONLY")], at=JACKPOT_AT, rules=RULES)
    jackpot = Jackpot("j2", seed_source=seeded(2))
    assert isinstance(jackpot.select(one), RapsPick)
    assert isinstance(jackpot.reselect(), EmptyPool)
    with pytest.raises(RapsError, match="no selection"):
        Jackpot("j3").reselect()


def test_exclusion_after_selection_is_passed_over_on_reselect() -> None:
    elig = eligibility([player(f"P{i}") for i in range(6)], at=JACKPOT_AT, rules=RULES)
    jackpot = Jackpot("j", seed_source=seeded(5))
    jackpot.select(elig)
    assert jackpot.pool is not None
    upcoming = pick_sequence(jackpot.pool, jackpot.reveal_seed(), 2)[1].card
    jackpot.exclude(upcoming)
    again = jackpot.reselect()
    assert isinstance(again, RapsPick)
    assert again.player.card != upcoming


def raps_claim() -> RapsClaim:
    return RapsClaim(
        3, jackpot_id="j", card="OK1", device="EGM-0412", area="main", bank="B12",
        alerted_at=JACKPOT_AT, actor=SYSTEM,
    )  # fmt: skip


def t(seconds: float) -> dt.datetime:
    return JACKPOT_AT + dt.timedelta(seconds=seconds)


def test_claim_verified_at_the_device() -> None:
    c = raps_claim()
    c.crew_arrived(CREW, t(60))
    c.verify_at_device(CREW, t(70))
    assert c.won
    assert c.state is R.VERIFIED_AT_DEVICE
    assert c.history[1].detail["device"] == "EGM-0412"
    with pytest.raises(TransitionError, match="RAPS claim 3 is verified_at_device; it cannot be"):
        c.not_at_device(CREW, t(80))


def register() -> DeclineRegister:
    return DeclineRegister(
        "ff-2025-10-04", opens_at=JACKPOT_AT.replace(hour=8), starts_at=JACKPOT_AT.replace(hour=14)
    )


def test_player_gone_announcement_and_presentation_in_time() -> None:
    c = raps_claim()
    c.crew_arrived(CREW, t(60))
    c.not_at_device(CREW, t(70))
    with pytest.raises(TransitionError, match="it cannot be presented"):
        c.present(CREW, t(75))
    c.announce(DESK, t(80))
    assert c.deadline == t(170)
    assert [x.action for x in c.timers()] == ["reselect_or_register"]
    with pytest.raises(DeadlineError, match="cannot be reselected until after"):
        c.reselect(CREW, t(100), register())
    c.present(CREW, t(170))
    c.verify(CREW, t(200))
    assert c.won
    assert c.timers() == []


def test_late_presentation_then_reselection() -> None:
    c = raps_claim()
    for step in (c.crew_arrived, c.not_at_device, c.announce):
        step(CREW, t(60))
    with pytest.raises(DeadlineError, match="too late to be presented: 1 s after"):
        c.present(CREW, t(151))
    c.reselect(SYSTEM, t(151), register())
    assert c.state is R.RESELECTED
    assert not c.won


def test_decline_register_keeps_the_prize() -> None:
    reg = register()
    with pytest.raises(RoleError, match="only the desk"):
        reg.sign("OK1", CREW, JACKPOT_AT.replace(hour=9))
    with pytest.raises(RegisterError, match="until the session starts"):
        reg.sign("OK1", DESK, JACKPOT_AT.replace(hour=14))  # the session has started
    with pytest.raises(RegisterError, match="open from"):
        reg.sign("OK1", DESK, JACKPOT_AT.replace(hour=7))
    reg.sign("OK1", DESK, JACKPOT_AT.replace(hour=13, minute=59))
    with pytest.raises(RegisterError, match="signed already"):
        reg.sign("OK1", DESK, JACKPOT_AT.replace(hour=13, minute=59))
    c = raps_claim()
    for step in (c.crew_arrived, c.not_at_device, c.announce):
        step(CREW, t(60))
    with pytest.raises(RegisterError, match="signed the decline register; it still wins"):
        c.reselect(SYSTEM, t(200), reg)
    c.declined_register(SYSTEM, t(200), reg)
    assert c.won
    other = RapsClaim(
        4, jackpot_id="j", card="OK2", device="RL-03", area="smoking", bank="T1",
        alerted_at=JACKPOT_AT, actor=SYSTEM,
    )  # fmt: skip
    for step in (other.crew_arrived, other.not_at_device, other.announce):
        step(CREW, t(60))
    with pytest.raises(RegisterError, match="not in the decline register"):
        other.declined_register(SYSTEM, t(200), reg)


def test_card_not_its_owners_is_reselected_at_once() -> None:
    c = raps_claim()
    c.crew_arrived(CREW, t(60))
    c.not_owner(CREW, t(70))
    c.reselect(CREW, t(71), register())  # no claim time to wait for
    assert c.state is R.RESELECTED


RAPS_ACTIONS: dict[str, Callable[[RapsClaim], object]] = {
    "crew_arrived": lambda c: c.crew_arrived(CREW, t(10_000)),
    "verify_at_device": lambda c: c.verify_at_device(CREW, t(10_000)),
    "not_at_device": lambda c: c.not_at_device(CREW, t(10_000)),
    "not_owner": lambda c: c.not_owner(CREW, t(10_000)),
    "announce": lambda c: c.announce(CREW, t(10_000)),
    "present": lambda c: c.present(CREW, t(10_000)),
    "verify": lambda c: c.verify(CREW, t(10_000)),
    "declined_register": lambda c: c.declined_register(CREW, t(10_000), register()),
    "reselect": lambda c: c.reselect(CREW, t(10_000), register()),
}
PATHS: dict[RapsClaimState, list[str]] = {
    R.ALERTED: [],
    R.CREW_AT_DEVICE: ["crew_arrived"],
    R.VERIFIED_AT_DEVICE: ["crew_arrived", "verify_at_device"],
    R.NOT_AT_DEVICE: ["crew_arrived", "not_at_device"],
    R.NOT_OWNER: ["crew_arrived", "not_owner"],
    R.ANNOUNCED: ["crew_arrived", "not_at_device", "announce"],
    R.PRESENTED: ["crew_arrived", "not_at_device", "announce"],
    R.VERIFIED: ["crew_arrived", "not_at_device", "announce"],
    R.DECLINED_REGISTER: ["crew_arrived", "not_at_device", "announce"],
    R.RESELECTED: ["crew_arrived", "not_owner", "reselect"],
}


def claim_in(state: RapsClaimState) -> RapsClaim:
    c = raps_claim()
    clock = itertools.count(1)
    for action in PATHS[state]:
        c._move(action, CREW, t(next(clock)))
    if state in (R.PRESENTED, R.VERIFIED):
        c.present(CREW, t(10))
    if state is R.VERIFIED:
        c.verify(CREW, t(11))
    if state is R.DECLINED_REGISTER:
        c._move("declined_register", DESK, t(10))
    assert c.state is state
    return c


@pytest.mark.parametrize("state", list(R))
def test_every_illegal_raps_transition_raises(state: RapsClaimState) -> None:
    illegal = [a for a, rule in RapsClaim.RULES.items() if state not in rule.starts]
    for action in illegal:
        c = claim_in(state)
        with pytest.raises(TransitionError, match=f"^RAPS claim 3 is {state}; it cannot be "):
            RAPS_ACTIONS[action](c)
        assert c.state is state
