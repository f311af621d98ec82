"""Cross-field rules of a promotion file, each problem reported with its path in the file.

`schema.py` checks one value at a time; this module checks what ties values together:
a window's kind and the fields it needs, rounds in time order, references to prize sets,
multiplier windows that must not overlap, dates inside the promotion, and the ids the
series expand to. It also lists *warnings*: things that load but deserve a look
(placeholder values, a multiplier that changes no draw).

Paths use the file's own notation: `draws.halfway.qualification.threshold`, list items
counted from 1 (`multipliers[2]` is the second `[[multipliers]]` block).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from bonusd.promotions.kinds import QualificationKind, Tombola, TombolaMode, WindowKind
from bonusd.promotions.multipliers import multiplier_windows
from bonusd.promotions.schema import DrawSpec, JackpotSpec, Promotion
from bonusd.promotions.timing import bin_close_time, earning_window

Problem = tuple[str, str]  # (path, what is wrong)
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_KEY = r'(?:"[^"]*"|[A-Za-z0-9_-]+)'
_PATH = re.compile(rf"^{_KEY}(?:\.{_KEY}|\[\d+\])*$")
_PATH_PART = re.compile(r'"[^"]*"|[A-Za-z0-9_-]+|\[\d+\]')


def path_of(parts: Sequence[str | int]) -> str:
    """`("draws", "halfway", "rounds", 0)` -> `draws.halfway.rounds[1]`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part + 1}]"
            continue
        key = part if _BARE_KEY.match(part) else f'"{part}"'
        out += f".{key}" if out else key
    return out or "(file)"


def check_promotion(promotion: Promotion) -> list[Problem]:
    """Every cross-field problem of a promotion that passed the schema."""
    problems: list[Problem] = []
    if promotion.end < promotion.start:
        problems.append(
            ("end", f"must be on or after start ({promotion.start}), got {promotion.end}")
        )
    last_update = promotion.leaderboards.last_update
    if last_update and not promotion.start <= last_update <= promotion.end:
        problems.append(("leaderboards.last_update", _outside(promotion, last_update)))
    problems += _check_multipliers(promotion)
    seen_ids: dict[str, str] = {}
    for draw_id, entry in promotion.draws.items():
        where = path_of(("draws", draw_id))
        seen_ids[draw_id] = where
        problems += _check_draw_spec(promotion, entry, where)
        problems += _check_dated(promotion, entry, where, [entry.date], "date")
    for name, series in promotion.draw_series.items():
        where = path_of(("draw_series", name))
        problems += _check_draw_spec(promotion, series, where)
        problems += _check_dated(promotion, series, where, series.dates, "dates")
        for day in series.dates:
            draw_id = f"{name}-{day.isoformat()}"
            if draw_id in seen_ids:
                problems.append((where, f"draw id {draw_id!r} is also {seen_ids[draw_id]}"))
            seen_ids[draw_id] = where
    for name, jackpots in promotion.jackpot_series.items():
        where = path_of(("jackpot_series", name))
        problems += _check_jackpots(promotion, jackpots, where)
        problems += list(_check_dates(promotion, jackpots.dates, f"{where}.dates"))
    return problems


def check_marked_paths(raw: Mapping[str, Any], promotion: Promotion) -> list[Problem]:
    """Each path in `defaulted` / `unconfirmed` must name a setting written in the file."""
    problems: list[Problem] = []
    for key in ("defaulted", "unconfirmed"):
        for index, marked in enumerate(getattr(promotion, key)):
            if not _resolves(raw, marked):
                problems.append(
                    (path_of((key, index)), f"{marked!r} names no setting in this file")
                )
    return problems


def promotion_warnings(promotion: Promotion) -> list[str]:
    """Things that load but deserve a look before the promotion goes live."""
    out = [
        f"{marked}: placeholder; neither the seed nor DOMAIN.md gives it, confirm it"
        for marked in promotion.unconfirmed
    ]
    counting = [
        earning_window(promotion, d)
        for d in promotion.draw_list
        if d.qualification.kind is not QualificationKind.ACTIVES
    ]
    for index, window in enumerate(multiplier_windows(promotion)):
        if not any(w.opens < window.closes and window.opens < w.closes for w in counting):
            out.append(
                f"multipliers[{index + 1}] ({window.id}): falls in no points draw's earning "
                "window, so it changes no tickets or leaderboard"
            )
    return out


def _resolves(raw: Mapping[str, Any], marked: str) -> bool:
    if not _PATH.match(marked):
        return False
    node: Any = raw
    for part in _PATH_PART.findall(marked):
        if part.startswith("["):
            index = int(part[1:-1]) - 1
            if not isinstance(node, list) or not 0 <= index < len(node):
                return False
            node = node[index]
        else:
            key = part.strip('"')
            if not isinstance(node, dict) or key not in node:
                return False
            node = node[key]
    return True


def _outside(promotion: Promotion, day: dt.date) -> str:
    return f"must fall within the promotion ({promotion.start} to {promotion.end}), got {day}"


def _check_dates(promotion: Promotion, days: Sequence[dt.date], where: str) -> Iterator[Problem]:
    seen: set[dt.date] = set()
    for index, day in enumerate(days):
        if day in seen:
            yield (f"{where}[{index + 1}]", f"{day} is listed twice")
        seen.add(day)
        if not promotion.start <= day <= promotion.end:
            yield (f"{where}[{index + 1}]", _outside(promotion, day))


def _check_multipliers(promotion: Promotion) -> list[Problem]:
    problems: list[Problem] = []
    ids: dict[str, int] = {}
    for index, multiplier in enumerate(promotion.multipliers):
        where = path_of(("multipliers", index))
        if multiplier.id in ids:
            problems.append(
                (f"{where}.id", f"{multiplier.id!r} is also multipliers[{ids[multiplier.id] + 1}]")
            )
        ids.setdefault(multiplier.id, index)
        if multiplier.end <= multiplier.start:
            problems.append((f"{where}.end", f"must be after start ({multiplier.start:%H:%M})"))
        if not promotion.start <= multiplier.date <= promotion.end:
            problems.append((f"{where}.date", _outside(promotion, multiplier.date)))
        for other_index, other in enumerate(promotion.multipliers[:index]):
            shared = sorted(set(multiplier.sides) & set(other.sides))
            overlap = (
                multiplier.date == other.date
                and multiplier.start < other.end
                and other.start < multiplier.end
            )
            if shared and overlap:
                sides = ", ".join(s.value for s in shared)
                problems.append(
                    (where, f"overlaps multipliers[{other_index + 1}] ({other.id}) on {sides}")
                )
    return problems


def _check_dated(
    promotion: Promotion, spec: DrawSpec, where: str, days: Sequence[dt.date], key: str
) -> list[Problem]:
    """Dates inside the promotion, and each dated draw's window closing by its bin close."""
    if key == "date":
        paths = [f"{where}.date"]
        problems = (
            []
            if promotion.start <= days[0] <= promotion.end
            else [(paths[0], _outside(promotion, days[0]))]
        )
    else:
        paths = [f"{where}.dates[{i + 1}]" for i in range(len(days))]
        problems = list(_check_dates(promotion, days, f"{where}.dates"))
    if list(_check_window(spec, where)):
        return problems  # already reported; the window cannot be placed in time
    for at, day in zip(paths, days, strict=True):
        window = earning_window(promotion, spec.dated(day, "check"))
        closes = dt.datetime.combine(day, bin_close_time(spec), tzinfo=promotion.zone)
        if window.closes > closes:
            problem = f"the earning window closes after the entry bin ({closes:%Y-%m-%d %H:%M})"
            problems.append((at, problem))
    return problems


def _check_window(spec: DrawSpec, where: str) -> Iterator[Problem]:
    window = spec.window
    needed = {
        WindowKind.GAMING_DAYS: ("first", "last"),
        WindowKind.MONTHS_BEFORE_DRAW: ("months",),
        WindowKind.PLAY_WINDOW: ("start", "end"),
    }[window.kind]
    for name in ("first", "last", "months", "start", "end"):
        value = getattr(window, name)
        if name in needed and value is None:
            yield (f"{where}.window.{name}", f"is required for kind {window.kind.value!r}")
        elif name not in needed and value is not None:
            yield (
                f"{where}.window.{name}",
                f"is not used by kind {window.kind.value!r}; remove it",
            )
    if window.first and window.last and window.last < window.first:
        yield (
            f"{where}.window.last",
            f"must be on or after first ({window.first}), got {window.last}",
        )
    if window.start and window.end and window.end <= window.start:
        yield (f"{where}.window.end", f"must be after start ({window.start:%H:%M})")


def _check_draw_spec(promotion: Promotion, spec: DrawSpec, where: str) -> list[Problem]:
    problems = list(_check_window(spec, where))
    for tier in spec.tiers or ():
        if tier not in promotion.tiers:
            problems.append(
                (f"{where}.tiers", f"tier {tier.value} is not in the promotion's tiers")
            )
    qualification, tickets = spec.qualification, spec.tickets
    actives = qualification.kind is QualificationKind.ACTIVES
    if qualification.kind is QualificationKind.THRESHOLD and qualification.threshold is None:
        problems.append((f"{where}.qualification.threshold", "is required for kind 'threshold'"))
    if (
        qualification.kind is not QualificationKind.THRESHOLD
        and qualification.threshold is not None
    ):
        problems.append((f"{where}.qualification.threshold", "is only used by kind 'threshold'"))
    if actives and tickets.per_points is not None:
        problems.append((f"{where}.tickets.per_points", "'actives' qualification judges no side"))
    if not (tickets.per_points or tickets.per_visit or tickets.base):
        problems.append((f"{where}.tickets", "no rule gives tickets (per_points, per_visit, base)"))
    if tickets.min_one_if_played and tickets.per_points is None:
        problems.append((f"{where}.tickets.min_one_if_played", "needs per_points"))
    if spec.tombolas is TombolaMode.SEPARATE:
        problems += _check_separate(spec, where)
    problems += _check_rounds(promotion, spec, where)
    if spec.leaderboard and actives:
        problems.append((f"{where}.leaderboard", "'actives' qualification has no points board"))
    if spec.seats:
        if not spec.leaderboard:
            problems.append((f"{where}.seats", "seats need `leaderboard = true`"))
        for side in spec.seats.boards:
            if side not in qualification.sides:
                problems.append((f"{where}.seats.boards", f"{side.value} is not a judged side"))
    if spec.prize_set and spec.prize_set not in promotion.prize_sets:
        problems.append((f"{where}.prize_set", _unknown_prize_set(promotion, spec.prize_set)))
    return problems


def _check_separate(spec: DrawSpec, where: str) -> list[Problem]:
    problems: list[Problem] = []
    if spec.qualification.kind is QualificationKind.ACTIVES:
        problems.append((f"{where}.tombolas", "separate tombolas need per-side qualification"))
    for key in ("base", "app_bonus", "min_one_if_played"):
        if getattr(spec.tickets, key):
            problems.append((f"{where}.tickets.{key}", "not defined for separate tombolas"))
    if spec.caps:
        problems.append((f"{where}.caps", "not defined for separate tombolas"))
    return problems


def _check_rounds(promotion: Promotion, spec: DrawSpec, where: str) -> list[Problem]:
    problems: list[Problem] = []
    tombolas = set(spec.tombola_names)
    for index, rnd in enumerate(spec.rounds):
        at = f"{where}.rounds[{index + 1}]"
        if index and rnd.time <= spec.rounds[index - 1].time:
            problems.append((f"{at}.time", "rounds must be in time order, one per time"))
        for tombola in rnd.winners:
            if tombola not in tombolas:
                names = ", ".join(t.value for t in spec.tombola_names)
                problems.append((f"{at}.winners.{tombola.value}", f"no such tombola ({names})"))
        if rnd.prize_set and rnd.prize_set not in promotion.prize_sets:
            problems.append((f"{at}.prize_set", _unknown_prize_set(promotion, rnd.prize_set)))
    if Tombola.POOLED not in tombolas and not all(
        any(t in r.winners for r in spec.rounds) for t in tombolas
    ):
        problems.append((f"{where}.rounds", "every tombola needs winners in some round"))
    close = bin_close_time(spec)
    if close > spec.rounds[0].time:
        problems.append((f"{where}.activation.bin_close", "must not be after the first round"))
    if spec.activation.opens >= close:
        problems.append((f"{where}.activation.opens", f"must be before the bin close ({close})"))
    return problems


def _unknown_prize_set(promotion: Promotion, name: str) -> str:
    known = ", ".join(promotion.prize_sets) or "none defined"
    return f"no prize set {name!r} (prize_sets: {known})"


def _check_jackpots(promotion: Promotion, spec: JackpotSpec, where: str) -> list[Problem]:
    problems: list[Problem] = []
    if spec.end <= spec.start:
        problems.append((f"{where}.end", f"must be after start ({spec.start:%H:%M})"))
    times = spec.times
    kinds = [k for k in ("at", "every_minutes", "random") if getattr(times, k)]
    if len(kinds) != 1:
        problems.append((f"{where}.times", "give exactly one of at, every_minutes, random"))
    if (times.first or times.last) and not times.every_minutes:
        problems.append((f"{where}.times", "first and last go with every_minutes"))
    if times.every_minutes and (times.first is None or times.last is None):
        problems.append((f"{where}.times", "every_minutes needs first and last"))
    elif times.first and times.last and not spec.start < times.first <= times.last <= spec.end:
        problems.append((f"{where}.times", "first..last must lie within the session"))
    for index, when in enumerate(times.at):
        if not spec.start < when <= spec.end or (index and when <= times.at[index - 1]):
            problems.append(
                (f"{where}.times.at[{index + 1}]", "must be in order, within the session")
            )
    minutes = (spec.end.hour - spec.start.hour) * 60 + spec.end.minute - spec.start.minute
    if times.random and spec.end > spec.start and times.random > minutes:
        # the scheduler draws distinct whole minutes of the session
        said = f"at most {minutes} (the session's minutes), got {times.random}"
        problems.append((f"{where}.times.random", said))
    if spec.prize_set and spec.prize_set not in promotion.prize_sets:
        problems.append((f"{where}.prize_set", _unknown_prize_set(promotion, spec.prize_set)))
    return problems
