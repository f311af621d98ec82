"""Checking or reporting one draw reads the trail a batch at a time and keeps only that
draw's records (`Picked`), and reads only that draw's pool files: the desk's and the
CLI's `verify-draw`, `draw-report` and the draw's verify never hold months of trail or
every pool file the site ever froze."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bonusd.audit.chain import AuditRecord, Kind, Picked, next_record, to_jsonl, verify_chain
from bonusd.audit.store import AuditStore
from bonusd.cli.draws import live, write_pools
from bonusd.cli.main import app
from bonusd.draws.evidence import draw_report
from bonusd.draws.trailcheck import check_trail
from bonusd.errors import AuditFormatError
from bonusd.settings import Settings
from tests.draws.helpers import HALFWAY, Site
from tests.draws.tampering import redraw_removed, settled_draw, write_export


def chain_of(payloads: list[tuple[Kind, dict[str, Any]]]) -> list[AuditRecord]:
    out: list[AuditRecord] = []
    for kind, payload in payloads:
        at = dt.datetime(2026, 10, 3, 18, len(out), tzinfo=dt.UTC)
        out.append(
            next_record(out[-1] if out else None, at=at, actor="t", kind=kind, payload=payload)
        )
    return out


def test_picked_keeps_one_draw_its_rule_changes_and_checks_the_whole_chain() -> None:
    payloads: list[tuple[Kind, dict[str, Any]]] = [
        (Kind.POOL, {"draw_id": "gh.halfway", "n": 1}),
        (Kind.POOL, {"draw_id": "gh.final", "n": 2}),
        (Kind.RULE_CHANGE, {"promotion": "gh", "change": "raised the prize"}),
        (Kind.CLAIM, {"draw_id": "gh.halfway", "n": 3}),
        (Kind.EXCEPTION, {"note": "no draw"}),
        (Kind.POOL, {"draw_id": "mc.s1.j1", "n": 4}),
    ]
    records = chain_of(payloads)
    for size in (1, 2, 6):
        picked = Picked("halfway", suffix=True)
        for at in range(0, len(records), size):
            picked.add(records[at : at + size])
        assert picked.ids == {"gh.halfway", "gh.final", "mc.s1.j1"}
        kept = picked.of("gh.halfway")
        assert [r.payload.get("n") for r in kept] == [1, None, 3]  # the rule change between
        assert picked.walk.check == verify_chain(records)
    exact = Picked("gh.halfway")  # no suffix: only the id itself
    exact.add(records)
    assert [r.seq for r in exact.of("gh.halfway")] == [1, 3, 4]
    broken = [*records[:2], *records[3:]]
    torn = Picked("gh.halfway")
    torn.add(broken)
    assert not torn.walk.check.ok and torn.walk.check == verify_chain(broken)


def _no_whole_trail(monkeypatch: pytest.MonkeyPatch) -> None:
    async def whole(self: AuditStore, start: int = 0, end: int = -1) -> list[AuditRecord]:
        raise AssertionError("the whole trail was read at once")

    monkeypatch.setattr(AuditStore, "records", whole)


async def test_the_desk_and_the_cli_verify_a_draw_without_the_whole_trail(
    small: Site, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    records, pools, _ = await settled_draw(small)
    _no_whole_trail(monkeypatch)
    chain, rounds = await small.desk.verify(HALFWAY)
    assert chain.startswith("chain intact") and rounds and all(v.ok for v in rounds.values())
    config = Settings(redis_url=redis_url, site=small.keys.site, key_prefix=small.keys.prefix)
    got = await live(config, "halfway")
    assert got.draw_id == HALFWAY and got.picked.walk.check.ok and not got.bad
    assert set(got.pools) == set(pools)
    assert [r.seq for r in got.records] == [
        r.seq for r in records if r.payload.get("draw_id") == HALFWAY
    ]
    report = draw_report(got.records, HALFWAY, got.picked.walk.check).render()
    assert report == draw_report(records, HALFWAY).render()  # as from the whole trail


async def test_an_offline_check_reads_only_the_draws_own_pool_files(
    small: Site, tmp_path: Path
) -> None:
    """A pool file of another draw in the export's folder is not this draw's evidence: it
    is not read (a damaged one used to fail the check); one whose header does not say its
    draw is read, and named when it does not parse, and so is one under the name of a
    pool this draw's records commit to, whatever its header says."""
    records, pools, _ = await settled_draw(small)
    export = tmp_path / "audit.jsonl"
    export.write_text(to_jsonl(records), encoding="utf-8")
    folder = tmp_path / "pools"
    write_pools(pools, folder)
    other = next(iter(pools.values()))
    header = other.header().replace(f"draw={HALFWAY}", "draw=gh.final")
    (folder / "other.pool").write_text(header + "\nnot a pool line at all\n", encoding="utf-8")

    def verify() -> tuple[int, str]:
        args = ["verify-draw", "halfway", "--from", str(export), "--pools", str(folder)]
        result = CliRunner().invoke(app, args)
        return result.exit_code, result.output

    code, out = verify()
    assert code == 0 and "FAILED" not in out, out
    (folder / "torn.pool").write_bytes(b"\xff\xfe not a header\n")
    code, out = verify()
    assert code == 1 and "FAILED: pool file" in out and "torn.pool" in out, out
    (folder / "torn.pool").unlink()
    assert verify()[0] == 0
    mine = folder / f"{other.commitment}.pool"
    mine.write_bytes(header.encode() + b"\nnot a pool line at all\n")  # says: another draw
    code, out = verify()
    assert code == 1 and f"FAILED: pool file {mine}" in out, out
    report = CliRunner().invoke(app, ["draw-report", "halfway", "--from", str(export)])
    assert report.exit_code == 0 and HALFWAY in report.output


async def test_a_damaged_export_is_named_not_a_traceback(small: Site, tmp_path: Path) -> None:
    """A pool record without its commitment, a pool file whose header is not UTF-8 but
    names another draw, and a trail missing a redraw: each is named, with the draw's own
    record where a no-show owed a redraw is flagged (not whatever record ends the trail)."""
    records, pools, _ = await settled_draw(small)
    files = {c: p.serialise() for c, p in pools.items()}
    at = next(i for i, r in enumerate(records) if r.kind == Kind.POOL)
    payload = {k: v for k, v in records[at].payload.items() if k != "pool_commitment"}
    damaged = [*records[:at], dataclasses.replace(records[at], payload=payload)]
    write_export(tmp_path / "no-commitment", [*damaged, *records[at + 1 :]], files)
    result = CliRunner().invoke(app, ["verify-draw", "halfway", *_from(tmp_path / "no-commitment")])
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 1 and "FAILED" in result.output, result.output
    export = str(tmp_path / "no-commitment" / "audit.jsonl")
    result = CliRunner().invoke(app, ["draw-report", "halfway", "--from", export])
    assert isinstance(result.exception, AuditFormatError), result.exception  # (exit 2, main)
    assert "lacks what the report reads" in str(result.exception)
    odd = tmp_path / "no-commitment" / "pools" / "odd.pool"
    for header in (b"draw=gh.final tombola=t\tx=1", b"draw=gh.final junk"):
        odd.write_bytes(b"bonusd-pool-v1 " + header + b" round=1\nC1:1\n")
        result = CliRunner().invoke(app, ["verify-draw", "halfway", *_from(odd.parent.parent)])
        assert f"FAILED: pool file {odd}" in result.output, (header, result.output)

    write_export(tmp_path / "latin", records, files)
    odd = tmp_path / "latin" / "pools" / "odd.pool"
    odd.write_bytes(b"bonusd-pool-v1 draw=gh.final tombola=\xe9 round=1\nC1:1\n")
    result = CliRunner().invoke(app, ["verify-draw", "halfway", *_from(tmp_path / "latin")])
    assert result.exit_code == 1 and f"FAILED: pool file {odd}" in result.output, result.output

    elsewhere = {"draw_id": "gh.final", "note": "a record of another draw, last"}
    other = [*records, dataclasses.replace(records[-1], kind=Kind.EXCEPTION, payload=elsewhere)]
    kept, _ = redraw_removed(other, {})
    write_export(tmp_path / "no-redraw", kept, files)
    result = CliRunner().invoke(app, ["verify-draw", "halfway", *_from(tmp_path / "no-redraw")])
    line = next(x for x in result.output.splitlines() if "not redrawn" in x)
    seq = int(line.split("record ")[1].split(":")[0])
    mine = [r for r in kept if r.payload.get("draw_id") == HALFWAY]
    assert seq == mine[-1].seq, (line, mine[-1].seq)
    whole = check_trail(kept, HALFWAY, pools)  # the whole trail gives the same place
    assert [str(p) for p in whole] == [str(p) for p in check_trail(mine, HALFWAY, pools)]


def _from(folder: Path) -> list[str]:
    return ["--from", str(folder / "audit.jsonl"), "--pools", str(folder / "pools")]
