"""Command-line checks of draws: `bonusd verify-draw` and `bonusd draw-report`.

Both read the audit trail and the archived pool files, either live from the site's Redis
or offline from an export (`bonusd audit export FILE --pools DIR`), so an auditor can
re-check a draw on a machine that never ran bonusd's daemon.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, cast

import redis.asyncio as aioredis
import typer

from bonusd.audit import (
    AuditRecord,
    Kind,
    draw_report,
    evidence,
    from_jsonl,
    verify_chain,
)
from bonusd.audit_store import AuditStore
from bonusd.errors import NotFoundError
from bonusd.fairness import Pool
from bonusd.keys import Keys
from bonusd.poolfile import parse_pool
from bonusd.settings import Settings

POOL_SUFFIX = ".pool"


async def live(settings: Settings) -> tuple[list[AuditRecord], dict[str, Pool]]:
    """The site's audit records and every archived pool file they name."""
    r = aioredis.Redis.from_url(settings.redis_url, decode_responses=True)
    keys = Keys(settings.key_prefix, settings.site)
    try:
        records = await AuditStore(r, keys).records()
        pools: dict[str, Pool] = {}
        for rec in records:
            if rec.kind == Kind.POOL:
                commitment = rec.payload["pool_commitment"]
                raw = await r.get(f"{keys.base}poolfile:{commitment}")
                if raw is not None:
                    pools[commitment] = parse_pool(cast(str, raw).encode())
        return records, pools
    finally:
        await r.aclose()


def offline(export: Path, pools_dir: Path | None) -> tuple[list[AuditRecord], dict[str, Pool]]:
    records = from_jsonl(export.read_text(encoding="utf-8"))
    pools: dict[str, Pool] = {}
    if pools_dir is not None:
        for path in sorted(pools_dir.glob(f"*{POOL_SUFFIX}")):
            pool = parse_pool(path.read_bytes())
            pools[pool.commitment] = pool
    return records, pools


def write_pools(pools: dict[str, Pool], folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    for commitment, pool in pools.items():
        (folder / f"{commitment}{POOL_SUFFIX}").write_bytes(pool.serialise())
    return len(pools)


def subject(records: list[AuditRecord], ref: str) -> str:
    """The audit id of a draw or jackpot: as given, or the one id ending in `.ref`."""
    ids = {str(r.payload.get("draw_id")) for r in records if "draw_id" in r.payload}
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


def add_draw_commands(app: typer.Typer, settings: Callable[[], Settings]) -> None:
    def load(
        export: Path | None, pools_dir: Path | None
    ) -> tuple[list[AuditRecord], dict[str, Pool]]:
        if export is not None:
            return offline(export, pools_dir)
        return asyncio.run(live(settings()))

    @app.command("verify-draw")
    def verify_draw(
        draw: Annotated[str, typer.Argument(help="Draw id (promotion.draw) or jackpot id.")],
        export: FromOpt = None,
        pools_dir: PoolsOpt = None,
    ) -> None:
        """Recompute every pick of a draw from its revealed seeds and frozen pools and
        confirm every winner, or say where it differs (exit 1)."""
        records, pools = load(export, pools_dir)
        draw_id = subject(records, draw)
        chain = verify_chain(records)
        typer.echo(f"audit chain: {chain}")
        results = evidence(records, draw_id, pools).verify()
        if not results:
            typer.echo(f"draw {draw_id}: no picks recorded yet")
        for (tombola, number), result in sorted(results.items()):
            typer.echo(f"draw {draw_id} {tombola} round {number}: {result}")
        if not chain.ok or not results or not all(v.ok for v in results.values()):
            raise typer.Exit(1)

    @app.command("draw-report")
    def report(
        draw: Annotated[str, typer.Argument(help="Draw id (promotion.draw) or jackpot id.")],
        export: FromOpt = None,
        pools_dir: PoolsOpt = None,
    ) -> None:
        """Print the draw report: commitments, picks in draw order with call time and
        claim outcome, exceptions and overrides."""
        records, _ = load(export, pools_dir)
        typer.echo(draw_report(records, subject(records, draw)).render(), nl=False)
