"""The player-facing schedule sections of a promotion's terms, as a small document model.

`terms_document(promotion)` says, in the players' words, what a promotion file configures:
who may take part, each draw (dates and times, winners, earning window, qualification,
tickets, caps, activation), multiplier windows, leaderboard updates, bonus-jackpot
sessions, and claims and prize collection. `render.py` writes it as Markdown or HTML.
Values listed in the file's `unconfirmed` are printed as "to be confirmed", never guessed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from bonusd.promotions.kinds import Channel, DrawMode, QualificationKind, TombolaMode, WindowKind
from bonusd.promotions.schedule import jackpot_times, leaderboard_publications
from bonusd.promotions.schema import Draw, DrawSpec, JackpotSeries, Promotion
from bonusd.promotions.timing import bin_close_time, earning_window
from bonusd.registry.records import Tier

TBC = "to be confirmed by the promotions desk"


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Bullets:
    items: tuple[tuple[str, str], ...]  # (label, text); an empty label prints text alone


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


Block = Heading | Paragraph | Bullets | Table


def day(date: dt.date) -> str:
    return f"{date:%A %d %B %Y}"


def hm(moment: dt.time | dt.datetime) -> str:
    return f"{moment:%H:%M}"


def rands(cents: int) -> str:
    whole, part = divmod(cents, 100)
    return f"R{whole:,}" + (f".{part:02d}" if part else "")


def tier_list(tiers: tuple[Tier, ...] | list[Tier]) -> str:
    return ", ".join(t.value for t in tiers)


def terms_document(promotion: Promotion) -> list[Block]:
    where = f" at {promotion.casino}" if promotion.casino else ""
    blocks: list[Block] = [
        Heading(
            f"{promotion.casino} — {promotion.name}" if promotion.casino else promotion.name, 1
        ),
        Paragraph(
            f"The promotion runs from {day(promotion.start)} to {day(promotion.end)}{where}. "
            f"All times are local time ({promotion.timezone}). A gaming day runs from "
            f"{hm(promotion.gaming_day_start)} to {hm(_minute_before(promotion.gaming_day_start))} "
            "the next morning; a gaming visit is a "
            "gaming day on which you had rated play (at a slot machine or a table)."
        ),
        Heading("Who may take part"),
        Bullets(
            (
                ("", f"Tsogo Rewards members of tiers {tier_list(promotion.tiers)}."),
                (
                    "",
                    f"Nobody under {promotion.exclusions.minimum_age} on the draw date, and nobody "
                    "with a Refusal of Entry order, self-excluded, in the company's employ "
                    "(or family of), or otherwise excluded.",
                ),
                ("", "Entries cannot be bought for cash, points or anything else."),
            )
        ),
    ]
    if promotion.draw_list:
        blocks += _overview(promotion)
    for source, spec, draws in _draw_groups(promotion):
        blocks += _draw_section(promotion, source, spec, draws)
    blocks += _multipliers(promotion)
    blocks += _leaderboards(promotion)
    for name, series in promotion.jackpot_series.items():
        blocks += _jackpots(promotion, name, series)
    blocks += _claims(promotion)
    return blocks


def _minute_before(at: dt.time) -> dt.time:
    moment = dt.datetime.combine(dt.date(2000, 1, 2), at) - dt.timedelta(minutes=1)
    return moment.time()


def _draw_groups(promotion: Promotion) -> list[tuple[str, DrawSpec, list[Draw]]]:
    """One section per `[draws.<id>]` and per series, by first date."""
    groups: list[tuple[str, DrawSpec, list[Draw]]] = [
        (f"draws.{i}", spec, [promotion.draw(i)]) for i, spec in promotion.draws.items()
    ]
    groups += [
        (f"draw_series.{name}", spec, [d for d in promotion.draw_list if d.series == name])
        for name, spec in promotion.draw_series.items()
    ]
    return sorted(groups, key=lambda g: (g[2][0].date, g[0]))


def _winners(promotion: Promotion, source: str, spec: DrawSpec) -> list[str]:
    out = []
    for index, rnd in enumerate(spec.rounds):
        if f"{source}.rounds[{index + 1}].winners" in promotion.unconfirmed:
            out.append(f"{hm(rnd.time)} (number of winners {TBC})")
            continue
        if spec.tombolas is TombolaMode.SEPARATE:
            per = " and ".join(f"{n} from the {t.value} tombola" for t, n in rnd.winners.items())
        else:
            per = f"{rnd.total_winners} winner{'s' * (rnd.total_winners != 1)}"
        out.append(f"{hm(rnd.time)} ({per})")
    return out


def _overview(promotion: Promotion) -> list[Block]:
    rows = []
    for draw in promotion.draw_list:
        source = f"draw_series.{draw.series}" if draw.series else f"draws.{draw.id}"
        winners = "; ".join(_winners(promotion, source, draw))
        rows.append((draw.name, day(draw.date), winners, _window_text(promotion, draw)))
    return [
        Heading("Draws at a glance"),
        Table(("Draw", "Date", "Draw times and winners", "Earning window"), tuple(rows)),
    ]


def _window_text(promotion: Promotion, draw: Draw) -> str:
    window = earning_window(promotion, draw)
    opens, closes = window.opens, window.closes - dt.timedelta(minutes=1)
    if draw.window.kind is WindowKind.PLAY_WINDOW:
        return f"{hm(window.opens)} – {hm(window.closes)} on the draw date"
    if draw.window.kind is WindowKind.MONTHS_BEFORE_DRAW:
        return (
            f"the {draw.window.months} months before the draw: {opens:%d %B %Y %H:%M} until "
            f"the entry bin closes at {hm(window.closes)} on {window.closes:%d %B %Y}"
        )
    return f"{opens:%d %B %Y %H:%M} – {closes:%d %B %Y %H:%M}"


def _draw_section(
    promotion: Promotion, source: str, spec: DrawSpec, draws: list[Draw]
) -> list[Block]:
    first = draws[0]
    blocks: list[Block] = [Heading(spec.name)]
    how = "manual draw" if spec.mode is DrawMode.MANUAL else "electronic draw"
    how += f" ({spec.system})" if spec.system else ""
    how += f", {spec.place}" if spec.place else ""
    when = ", ".join(_winners(promotion, source, spec))
    if len(draws) == 1:
        lines = [("Draw", f"{day(first.date)} at {when}; {how}.")]
    else:
        blocks.append(Table(("Draw dates",), tuple((day(d.date),) for d in draws)))
        lines = [("Draw", f"on each date above at {when}; {how}.")]
    if spec.seats:
        boards = " and the ".join(s.value for s in spec.seats.boards)
        lines.append(
            (
                "Seats",
                f"the number one of the {boards} leaderboard is seated automatically (and "
                "is not drawn again from the tombolas: a member wins once per draw).",
            )
        )
    if spec.tiers is not None and tuple(spec.tiers) != tuple(promotion.tiers):
        lines.append(("Open to", f"tiers {tier_list(spec.tiers)} only."))
    windows = {_window_text(promotion, d) for d in draws}
    lines.append(("Earning window", windows.pop() + "." if len(windows) == 1 else "per date."))
    lines.append(("Who qualifies", _qualification(spec)))
    lines.append(("Tickets", _tickets(spec)))
    if spec.caps:
        lines.append(("Ticket caps", _caps(spec)))
    lines.append(("Entries", _activation(spec)))
    if spec.leaderboard:
        pubs = leaderboard_publications(promotion, first)
        when_pub = f"from {pubs[0]:%d %B} to {pubs[-1]:%d %B %Y}" if pubs else "weekly"
        lines.append(
            (
                "Leaderboards",
                f"separate slots and tables boards of qualifiers, updated every "
                f"{promotion.leaderboards.weekday.value.title()} at "
                f"{hm(promotion.leaderboards.time)} {when_pub}.",
            )
        )
    prize = promotion.prize_sets.get(spec.prize_set or "")
    if prize and prize.description:
        lines.append(("Prizes", prize.description))
    blocks.append(Bullets(tuple(lines)))
    return blocks


def _qualification(spec: DrawSpec) -> str:
    rule = spec.qualification
    sides = " or on ".join(s.value for s in rule.sides)
    if rule.kind is QualificationKind.ACTIVES:
        return "members with at least one gaming visit in the earning window."
    if rule.kind is QualificationKind.PLAY_IN_WINDOW:
        return f"members with rated play on {sides} in the earning window."
    assert rule.threshold is not None
    return (
        f"at least {rule.threshold:,} points on {sides} in the earning window. Slots and "
        "tables points are never combined: each side qualifies on its own."
    )


def _tickets(spec: DrawSpec) -> str:
    tickets = spec.tickets
    separate = spec.tombolas is TombolaMode.SEPARATE
    parts = []
    if tickets.per_points:
        parts.append(_per_points_text(spec))
    if tickets.min_one_if_played:
        parts.append("at least 1 ticket for any rated play in the window")
    if tickets.per_visit:
        if separate:
            scope = "with play on that side, into that side's tombola"
        elif spec.qualification.kind is QualificationKind.ACTIVES:
            scope = "in the window"
        else:
            scope = "in the window (once per member, not per side)"
        parts.append(
            f"{tickets.per_visit} ticket{'s' * (tickets.per_visit != 1)} per gaming visit {scope}"
        )
    if tickets.base:
        parts.append(f"{tickets.base} free ticket{'s' * (tickets.base != 1)} for every qualifier")
    if tickets.app_bonus:
        parts.append(f"{tickets.app_bonus} bonus tickets for Tsogo Sun App users")
    return "; ".join(parts) + "."


def _per_points_text(spec: DrawSpec) -> str:
    assert spec.tickets.per_points is not None
    rate = f"1 ticket per {spec.tickets.per_points:,} points"
    if spec.tombolas is TombolaMode.SEPARATE:
        return f"{rate} of a qualifying side, into that side's tombola (slots or tables)"
    if spec.qualification.kind is QualificationKind.THRESHOLD:
        return f"{rate} on each qualifying side, counted separately"
    return f"{rate} on slots and on tables, counted separately"


def _caps(spec: DrawSpec) -> str:
    groups: dict[int, list[str]] = {}
    for tier, cap in spec.caps.items():
        groups.setdefault(cap, []).append(tier.value)
    caps = "; ".join(f"{' and '.join(t)}: {cap:,} tickets" for cap, t in sorted(groups.items()))
    return f"{caps} per draw, after bonus tickets."


def _activation(spec: DrawSpec) -> str:
    ways = []
    if Channel.KIOSK in spec.activation.channels:
        ways.append("printing your receipt at an eHost kiosk")
    if Channel.APP in spec.activation.channels:
        active = (
            " (the app accepts entries only while you are playing: carded in at a slot "
            "machine or rated at a table)"
            if spec.activation.app_requires_active
            else ""
        )
        ways.append(f"registering in the Tsogo Sun App{active}")
    return (
        f"activate your tickets by {' or '.join(ways)}, from {hm(spec.activation.opens)} on "
        f"the draw day until the entry bin closes at {hm(bin_close_time(spec))}. Your ticket "
        "count is final when the bin closes."
    )


def _multipliers(promotion: Promotion) -> list[Block]:
    if not promotion.multipliers:
        return []
    rows = tuple(
        (day(m.date), hm(m.start), hm(m.end), f"{m.factor.normalize()}x", " and ".join(m.sides))
        for m in sorted(promotion.multipliers, key=lambda m: (m.date, m.start))
    )
    return [
        Heading("Points multipliers"),
        Paragraph(
            "During these windows the points of your play are multiplied for this "
            "promotion (by the time of the play). Multiplied points count in every draw "
            "whose earning window includes the play."
        ),
        Table(("Date", "From", "Until", "Factor", "Applies to"), rows),
    ]


def _leaderboards(promotion: Promotion) -> list[Block]:
    boards = [d for d in promotion.draw_list if d.leaderboard]
    if not boards:
        return []
    cfg = promotion.leaderboards
    text = f"Public leaderboards are updated every {cfg.weekday.value.title()} at {hm(cfg.time)}"
    if cfg.last_update:
        text += f"; the last update is on {day(cfg.last_update)}, showing the final qualifiers"
    return [Heading("Leaderboard updates"), Paragraph(text + ".")]


def _jackpots(promotion: Promotion, name: str, spec: JackpotSeries) -> list[Block]:
    source = f"jackpot_series.{name}"
    sessions = [s for s in promotion.jackpot_sessions if s.series == name]
    times = jackpot_times(promotion, sessions[0]) if sessions and not spec.times.random else ()
    if spec.times.every_minutes and times:
        when = (
            f"a jackpot every {spec.times.every_minutes} minutes from {hm(times[0])} to "
            f"{hm(times[-1])} ({len(times)} per session)"
        )
    elif times:
        when = f"jackpots at {', '.join(hm(t) for t in times)}"
    else:
        when = f"{spec.times.random} jackpots at random times"
    empty = (
        TBC
        if f"{source}.empty_pool" in promotion.unconfirmed
        else f"selection is retried {spec.empty_pool.retries} times, "
        f"{spec.empty_pool.retry_seconds} seconds apart"
    )
    prize = promotion.prize_sets.get(spec.prize_set or "")
    lines = [
        ("Sessions", f"from {hm(spec.start)} to {hm(spec.end)} on each date above; {when}."),
        (
            "Who can win",
            f"members actively playing (carded in at a slot machine or rated at a table, "
            f"with rated play in the last {spec.active_play_minutes} minutes) in the "
            f"{' and '.join(spec.areas)} areas, who have spent at least "
            f"{rands(spec.min_spend_cents)} on the gaming day of the session. The RAPS "
            "application picks one at random at each jackpot time.",
        ),
        (
            "Presenting",
            "the promotions crew comes to your device and checks the card is yours. If you "
            f"have left it, you are announced and have {spec.claim_seconds} seconds to "
            "present yourself at the draw place; otherwise another winner is selected.",
        ),
    ]
    if spec.decline_register:
        lines.append(
            (
                "Decline register",
                "sign it at the Tsogo Rewards Desk before the session to be acknowledged for "
                "a prize if you are not present.",
            )
        )
    lines.append(("If nobody qualifies", f"{empty}."))
    if prize and prize.description:
        lines.append(("Prizes", prize.description))
    return [
        Heading(spec.name),
        Table(("Session dates",), tuple((day(s.date),) for s in sessions)),
        Bullets(tuple(lines)),
    ]


def _claims(promotion: Promotion) -> list[Block]:
    claims = promotion.claims
    ids = ", ".join(claims.identification)
    return [
        Heading("Claims and prize collection"),
        Bullets(
            (
                (
                    "Claim",
                    f"a winner (or proxy) has {claims.claim_seconds} seconds from the announcement "
                    f"to present with identification ({ids}) and the ticket receipt; "
                    "otherwise a redraw picks another winner.",
                ),
                ("Once per draw", "a member may be drawn more than once but wins once per draw."),
                (
                    "Proxies",
                    f"proxy forms are available from {hm(claims.proxy_forms_open)} until "
                    f"{claims.proxy_cutoff_minutes} minutes before each draw. A proxy may "
                    "represent one participant only and never receives the prize.",
                ),
                (
                    "Collection",
                    f"prizes are collected and signed for by the winner (not a proxy) within "
                    f"{claims.prize_letter_days} days of the draw.",
                ),
            )
        ),
    ]
