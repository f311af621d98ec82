"""Command-line checks of draws: `bonusd verify-draw` and `bonusd draw-report`.

Both read the audit trail and the archived pool files, either live from the site's Redis
or offline from an export (`bonusd audit export FILE --pools DIR`), so an auditor can
re-check a draw on a machine that never ran bonusd's daemon. For a RAPS jackpot the
export holds each attempt's archived floor snapshot too (`{jackpot id}.{attempt}.floor`,
and `{jackpot id}.{attempt}.base.floor` for the base of one archived as a difference),
and `verify-draw` recomputes the pool from it under the session's rules (read from the
promotion file: `--promotion`, or the daemon's promotions folder when live).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from redis.asyncio import Redis

from bonusd.audit.archive import jsonl_batches
from bonusd.audit.chain import AuditRecord, Kind, Picked
from bonusd.audit.store import AuditStore
from bonusd.cli.text import safe, safe_lines
from bonusd.draws.evidence import draw_report, evidence
from bonusd.draws.fairness import Pool
from bonusd.draws.poolfile import header_fields, parse_pool
from bonusd.errors import AuditFormatError, NotFoundError
from bonusd.infra.keys import Keys
from bonusd.infra.redisclient import redis_client
from bonusd.promotions import Promotion, load_promotion, load_promotions
from bonusd.raps.floorarchive import archived_floor
from bonusd.raps.plan import rules_of
from bonusd.raps.snapshot import check_floor
from bonusd.settings import Settings

POOL_SUFFIX = ".pool"
FLOOR_SUFFIX = ".floor"
BASE = ".base"  # `{jackpot id}.{attempt}.base.floor`: the base a difference names
HEADER_BYTES = 4096  # a pool file's header line is read this far to learn its draw
Floors = dict[str, bytes]  # "{jackpot id}.{attempt}" -> the archived floor snapshot file


def _floor_records(records: list[AuditRecord], draw_id: str | None = None) -> list[AuditRecord]:
    """The POOL records of RAPS jackpots (those judged from a floor snapshot)."""
    return [
        r
        for r in records
        if r.kind == Kind.POOL
        and "floor_sha256" in r.payload
        and (draw_id is None or r.payload.get("draw_id") == draw_id)
    ]


def floor_name(payload: Mapping[str, object]) -> str:
    return f"{payload['draw_id']}.{payload['round']}"


async def live_floors(settings: Settings, records: list[AuditRecord]) -> Floors:
    """Every archived RAPS floor snapshot the site's POOL records name."""
    redis = redis_client(settings)
    keys = Keys(settings.key_prefix, settings.site)
    try:
        out: Floors = {}
        for rec in _floor_records(records):
            out |= await floor_files(redis, keys, rec.payload)
        return out
    finally:
        await redis.aclose()


async def floor_files(redis: Redis, keys: Keys, payload: Mapping[str, Any]) -> Floors:
    """The archived floor snapshot a RAPS POOL record's `payload` names, and the base it
    was archived against, by the names an export gives them (none when missing)."""
    raw = await archived_floor(redis, keys, payload["draw_id"], payload["round"])
    if raw is None:
        return {}
    name = floor_name(payload)
    return {name: raw[0]} | ({} if raw[1] is None else {name + BASE: raw[1]})


@dataclass
class Loaded:
    """One draw's part of the trail (`Picked`: its records, the whole chain's check), its
    pool files read, and one line per pool file that could not be."""

    draw_id: str
    picked: Picked
    pools: dict[str, Pool] = field(default_factory=dict)
    bad: list[str] = field(default_factory=list)

    @property
    def records(self) -> list[AuditRecord]:
        return self.picked.of(self.draw_id)


def read_pool(raw: bytes, where: str, pools: dict[str, Pool], bad: list[str]) -> None:
    """Add the pool file `raw` to `pools`, or say where it is and what is wrong in `bad`:
    one bad file never stops the others being read."""
    try:
        pool = parse_pool(raw)
    except AuditFormatError as exc:
        bad.append(f"{where}: {exc}")
        return
    pools[pool.commitment] = pool


async def live(settings: Settings, ref: str) -> Loaded:
    """The draw `ref` names (`subject`) out of the site's trail, read a batch at a time,
    and the archived pool files its records name."""
    redis = redis_client(settings)
    keys = Keys(settings.key_prefix, settings.site)
    try:
        picked = await AuditStore(redis, keys).draw(ref, suffix=True)
        got = Loaded(subject(picked.ids, ref), picked)
        for rec in got.records:
            if rec.kind == Kind.POOL:
                name = keys.poolfile(rec.payload["pool_commitment"])
                raw = await redis.get(name)
                if raw is not None:
                    read_pool(cast(str, raw).encode(), f"pool file {name}", got.pools, got.bad)
        return got
    finally:
        await redis.aclose()


def offline_floors(pools_dir: Path | None, draw_id: str | None = None) -> Floors:
    """The exported floor snapshots in `pools_dir` (of jackpot `draw_id` only, if given)."""
    if pools_dir is None:
        return {}
    found = {p.name[: -len(FLOOR_SUFFIX)]: p for p in pools_dir.glob(f"*{FLOOR_SUFFIX}")}
    prefix = "" if draw_id is None else f"{draw_id}."
    return {name: path.read_bytes() for name, path in found.items() if name.startswith(prefix)}


def _pool_draw(path: Path) -> str | None:
    """The draw id a pool file's header line names, or None unless that line is a pool
    file's header (UTF-8, `header_fields`, LF-ended, one `draw=`, no whitespace in a field)."""
    with path.open("rb") as file:
        line = file.readline(HEADER_BYTES)
    try:
        fields = header_fields(line.decode().removesuffix("\n"))
    except ValueError:  # (UnicodeDecodeError is one)
        return None
    draws = [f.removeprefix("draw=") for f in fields if f.startswith("draw=")]
    spaced = any(f.split() != [f] for f in fields)
    return draws[0] if line.endswith(b"\n") and len(draws) == 1 and not spaced else None


def offline(export: Path, pools_dir: Path | None, ref: str) -> Loaded:
    """The draw `ref` names out of an export, read a batch at a time, and the exported
    pool files of that draw: those named by its pool records' commitments, and those whose
    header names it (one whose header does not parse is read too, to say why)."""
    picked = Picked(ref, suffix=True)
    for batch in jsonl_batches([export]):
        picked.add(batch)
    got = Loaded(subject(picked.ids, ref), picked)
    commitments = [r.payload.get("pool_commitment") for r in got.records if r.kind == Kind.POOL]
    named = {commitment for commitment in commitments if isinstance(commitment, str)}
    for path in sorted(pools_dir.glob(f"*{POOL_SUFFIX}")) if pools_dir else []:
        if path.name[: -len(POOL_SUFFIX)] in named or _pool_draw(path) in (got.draw_id, None):
            read_pool(path.read_bytes(), f"pool file {path}", got.pools, got.bad)
    return got


def write_pools(pools: dict[str, Pool], folder: Path, floors: Floors | None = None) -> int:
    """Write the pool files (and RAPS floor snapshots) an offline check reads; returns
    how many files."""
    folder.mkdir(parents=True, exist_ok=True)
    for commitment, pool in pools.items():
        (folder / f"{commitment}{POOL_SUFFIX}").write_bytes(pool.serialise())
    for name, raw in (floors or {}).items():
        (folder / f"{name}{FLOOR_SUFFIX}").write_bytes(raw)
    return len(pools) + len(floors or {})


def _promotion(draw_id: str, path: Path | None, settings: Callable[[], Settings]) -> Promotion:
    pid = draw_id.split(".", maxsplit=1)[0]
    if path is not None:
        return load_promotion(path)
    found = [p for p in load_promotions(settings().promotions) if p.id == pid]
    if not found:
        raise NotFoundError(
            f"promotion {pid} is not in the promotions folder; name its file with --promotion"
        )
    return found[0]


def check_floors(
    records: list[AuditRecord],
    draw_id: str,
    pools: dict[str, Pool],
    floors: Floors,
    promotion: Promotion,
) -> list[str]:
    """One line per RAPS attempt of `draw_id`: its pool recomputed from its floor snapshot
    ("... ok"), or where it differs ("... FAILED: ...")."""
    lines = []
    for rec in _floor_records(records, draw_id):
        payload = rec.payload
        session = promotion.jackpot_session(str(payload["draw_id"]).split(".")[1])
        rules = rules_of(promotion, session)
        pool = pools.get(str(payload.get("pool_commitment")))
        name = floor_name(payload)
        wrong = check_floor(payload, floors.get(name), pool, rules, floors.get(name + BASE))
        verdict = "ok: the pool is its eligible players" if wrong is None else f"FAILED: {wrong}"
        lines.append(f"jackpot {draw_id} attempt {payload['round']} floor snapshot: {verdict}")
    return lines


def unrecorded(records: list[AuditRecord], draw_id: str, pools: Mapping[str, Pool]) -> list[str]:
    """A pool file of `draw_id` that no pool record names: altered after the freeze, or
    not this site's."""
    named = {r.payload.get("pool_commitment") for r in records if r.kind == Kind.POOL}
    return [
        f"a pool file of {draw_id} {p.tombola} round {p.round_no} (hash {c}) matches no pool record"
        for c, p in pools.items()
        if p.draw_id == draw_id and c not in named
    ]


def subject(ids: Collection[str], ref: str) -> str:
    """The audit id of a draw or jackpot among `ids`: as given, or the one ending in `.ref`."""
    if ref in ids:
        return ref
    found = sorted(i for i in ids if i.endswith(f".{ref}"))
    if len(found) != 1:
        known = ", ".join(sorted(ids)[:20]) or "none"
        raise NotFoundError(
            f"the audit trail has {len(found)} draws matching {ref!r}; known ids: {known}"
        )
    return found[0]


FromOpt = Annotated[
    Path | None,
    typer.Option("--from", exists=True, dir_okay=False, help="Audit export (JSON Lines)."),
]
PoolsOpt = Annotated[
    Path | None,
    typer.Option("--pools", exists=True, file_okay=False, help="Folder of exported pool files."),
]
PromotionOpt = Annotated[
    Path | None,
    typer.Option(
        "--promotion", exists=True, dir_okay=False, help="The promotion file (RAPS jackpots)."
    ),
]


def add_draw_commands(app: typer.Typer, settings: Callable[[], Settings]) -> None:
    def load(ref: str, export: Path | None, pools_dir: Path | None) -> Loaded:
        if export is not None:
            return offline(export, pools_dir, ref)
        return asyncio.run(live(settings(), ref))

    @app.command("verify-draw")
    def verify_draw(
        draw: Annotated[str, typer.Argument(help="Draw id (promotion.draw) or jackpot id.")],
        export: FromOpt = None,
        pools_dir: PoolsOpt = None,
        promotion: PromotionOpt = None,
    ) -> None:
        """Recompute every pick of a draw from its revealed seeds and frozen pools and
        confirm every winner, or say where it differs (exit 1). For a RAPS jackpot, also
        recompute each pool from its archived floor snapshot."""
        got = load(draw, export, pools_dir)
        records, pools, bad, draw_id = got.records, got.pools, got.bad, got.draw_id
        chain = got.picked.walk.check
        typer.echo(safe(f"audit chain: {chain}"))
        bad += unrecorded(records, draw_id, pools)
        for line in bad:  # named, and every other file still verified
            typer.echo(safe(f"FAILED: {line}"))
        results = evidence(records, draw_id, pools).verify()
        if not results:
            typer.echo(safe(f"draw {draw_id}: no picks recorded yet"))
        for (tombola, number), result in sorted(results.items()):
            typer.echo(safe(f"draw {draw_id} {tombola} round {number}: {result}"))
        floor_lines: list[str] = []
        if _floor_records(records, draw_id):
            floors = (
                offline_floors(pools_dir, draw_id)
                if export is not None
                else asyncio.run(live_floors(settings(), records))
            )
            terms = _promotion(draw_id, promotion, settings)
            floor_lines = check_floors(records, draw_id, pools, floors, terms)
            typer.echo("\n".join(map(safe, floor_lines)))
        failed = bool(bad) or any("FAILED" in line for line in floor_lines)
        if not chain.ok or not results or not all(v.ok for v in results.values()) or failed:
            raise typer.Exit(1)

    @app.command("draw-report")
    def report(
        draw: Annotated[str, typer.Argument(help="Draw id (promotion.draw) or jackpot id.")],
        export: FromOpt = None,
        pools_dir: PoolsOpt = None,
    ) -> None:
        """Print the draw report: commitments, picks in draw order with call time and
        claim outcome, exceptions and overrides."""
        got = load(draw, export, None)
        try:
            found = draw_report(got.records, got.draw_id, got.picked.walk.check)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a damaged trail
            raise AuditFormatError(
                f"a record of {got.draw_id} lacks what the report reads ({exc!r}); "
                f"`bonusd verify-draw {got.draw_id}` names where the trail differs"
            ) from None
        # an export read from a file is anyone's text: shown, never obeyed, by the terminal
        typer.echo(safe_lines(found.render()), nl=False)
