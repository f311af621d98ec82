"""The tamper corpus (issue 16): one real draw exported as an auditor receives it, and the
same export altered the ways an insider would, each re-hashed into a valid chain where
the record layer allows, so only the draw's own checks can catch it.

`settled_draw` runs the Golden Horse halfway draw's first round on real Redis with an
approved exclusion after the freeze (passing over the stream's first winner), a no-show
and its redraw, sealed reveals and a prize letter, until its seed is revealed.
`write_corpus` writes `<name>/audit.jsonl` and `<name>/pools/*.pool` for the untouched
export and every tamper.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

from bonusd.audit.chain import AuditRecord, Kind, record_hash, to_jsonl
from bonusd.cli.draws import write_pools
from bonusd.draws.fairness import CandidateStream, Pool
from bonusd.draws.poolfile import parse_pool
from tests.draws.helpers import CREW, DESK, FIVE_PRIZES, HALFWAY, HW, PID, Site, exclude_approved

Records = list[AuditRecord]
Pools = dict[str, bytes]  # commitment -> pool file bytes
Tamper = Callable[[Records, Pools], tuple[Records, Pools]]


async def settled_draw(s: Site) -> tuple[Records, dict[str, Pool], str]:
    """The halfway draw's first round, settled; returns the trail, the pools and the card
    an approved exclusion passed over."""
    await s.desk.commit_seeds(PID, HW)
    s.clock.set(s.at(HW, 19))
    await s.desk.close_bin(PID, HW)
    book = await s.desk.book(PID, HW)
    rnd = book.draw.round("pooled", 1)
    assert rnd.pool is not None
    stream = CandidateStream(rnd.seed, HALFWAY, "pooled", rnd.pool.commitment)
    first = rnd.pool.owner(stream.below(rnd.pool.total)[1])
    await exclude_approved(s.desk, HW, first, "self-exclusion form handed in at 18h58")
    await s.desk.load_prizes(PID, HW, ("pooled", 1), FIVE_PRIZES, DESK)
    await s.desk.run_round(PID, HW, 1)
    s.clock.advance(10)
    for claim in (1, 3, 4, 5):
        await play(s, claim, reveal=claim)
    s.clock.advance(90)
    assert await s.desk.run_due(PID, HW) == 1  # claim 2: a no-show, and its redraw
    await play(s, 6, reveal=2)
    await s.desk.act(PID, HW, 1, "issue_letter", DESK)
    records = await s.desk.audit.records()
    assert any(r.kind == Kind.SEED_REVEAL for r in records), "the round did not settle"
    book = await s.desk.book(PID, HW)
    pools = {r.pool.commitment: r.pool for r in book.draw.rounds.values() if r.pool}
    return records, pools, first


async def play(s: Site, claim: int, *, reveal: int) -> None:
    for action in ("present", "verify"):
        await s.desk.act(PID, HW, claim, action, CREW)
    await s.desk.act(PID, HW, claim, "pick_reveal", CREW, reveal=reveal)


def rehash(records: Records) -> Records:
    """The records renumbered and re-chained: what an insider who rewrites the trail
    produces (the chain check alone then passes)."""
    out: Records = []
    prev = "0" * 64
    for seq, rec in enumerate(records, 1):
        body = dataclasses.replace(rec, seq=seq, prev_hash=prev, hash="")
        digest = record_hash(body.body())
        out.append(dataclasses.replace(body, hash=digest))
        prev = digest
    return out


def _payload(rec: AuditRecord, **changes: object) -> AuditRecord:
    return dataclasses.replace(rec, payload=json.loads(json.dumps(rec.payload)) | changes)


def _index(records: Records, test: Callable[[AuditRecord], bool]) -> int:
    return next(i for i, r in enumerate(records) if test(r))


def pool_byte(records: Records, pools: Pools) -> tuple[Records, Pools]:
    """One ticket moved from the first card holding two to the last card: the file still
    reads, with the same totals, but is not the frozen pool."""
    commitment, raw = next((c, raw) for c, raw in pools.items() if b" round=1 " in raw)
    header, *rows = raw.decode().rstrip("\n").split("\n")
    cells = [row.rsplit(":", 1) for row in rows]
    giver = next(i for i, (_, n) in enumerate(cells) if int(n) > 1)
    cells[giver][1] = str(int(cells[giver][1]) - 1)
    cells[-1][1] = str(int(cells[-1][1]) + 1)
    text = "\n".join([header, *(f"{c}:{n}" for c, n in cells)]) + "\n"
    return records, pools | {commitment: text.encode()}


def pool_garbage(records: Records, pools: Pools) -> tuple[Records, Pools]:
    commitment = next(iter(pools))
    return records, pools | {commitment: b"bonusd-pool-v1 draw=x\n\xff\xfe"}


def claim_prize(records: Records, pools: Pools) -> tuple[Records, Pools]:
    """A revealed prize raised to the top prize in the claim's record."""
    i = _index(
        records,
        lambda r: (
            r.kind == Kind.CLAIM
            and r.payload["action"] == "pick_reveal"
            and r.payload["detail"]["prize"] != "R10000"
        ),  # type: ignore[call-overload,index]
    )
    detail = dict(records[i].payload["detail"]) | {"prize": "R10000"}  # type: ignore[arg-type]
    records = [*records[:i], _payload(records[i], detail=detail), *records[i + 1 :]]
    return rehash(records), pools


def redraw_removed(records: Records, pools: Pools) -> tuple[Records, Pools]:
    i = _index(records, lambda r: r.kind == Kind.REDRAW)
    card = records[i].payload["card"]
    kept = [
        r
        for n, r in enumerate(records)
        if n != i and not (r.kind == Kind.CLAIM and r.payload["card"] == card and n > i)
    ]
    return rehash(kept), pools


def winner_swapped(records: Records, pools: Pools) -> tuple[Records, Pools]:
    i = _index(records, lambda r: r.kind == Kind.PICK)
    winner = records[i].payload["card"]
    others = [c for c in next(iter(_pools(pools).values())).cards if c != winner]
    swapped = [
        _payload(r, card=others[-1])
        if r.payload.get("card") == winner and r.kind in (Kind.PICK, Kind.CLAIM)
        else r
        for r in records
    ]
    return rehash(swapped), pools


def seed_replaced(records: Records, pools: Pools) -> tuple[Records, Pools]:
    i = _index(records, lambda r: r.kind == Kind.SEED_REVEAL)
    records = [*records[:i], _payload(records[i], seed="11" * 32), *records[i + 1 :]]
    return rehash(records), pools


def exclusion_after_pick(records: Records, pools: Pools) -> tuple[Records, Pools]:
    """The exclusion (with its request and approval) moved after the pick passing over."""
    moved = [r for r in records if r.kind in (Kind.REQUEST, Kind.APPROVAL, Kind.EXCLUSION)]
    rest = [r for r in records if r not in moved]
    i = _index(rest, lambda r: r.kind == Kind.PICK)
    return rehash(rest[: i + 1] + moved + rest[i + 1 :]), pools


def exclusion_unapproved(records: Records, pools: Pools) -> tuple[Records, Pools]:
    """The request and approval removed, the exclusion stripped of their names."""
    kept = [r for r in records if r.kind not in (Kind.REQUEST, Kind.APPROVAL)]
    i = _index(kept, lambda r: r.kind == Kind.EXCLUSION)
    names = ("request", "requested_by", "approved_by")
    stripped = {k: v for k, v in kept[i].payload.items() if k not in names}
    kept[i] = dataclasses.replace(kept[i], payload=stripped)
    return rehash(kept), pools


def self_approved(records: Records, pools: Pools) -> tuple[Records, Pools]:
    """The approval re-signed by the person who asked."""
    i = _index(records, lambda r: r.kind == Kind.REQUEST)
    j = _index(records, lambda r: r.kind == Kind.APPROVAL)
    k = _index(records, lambda r: r.kind == Kind.EXCLUSION)
    out = list(records)
    out[j] = dataclasses.replace(out[j], actor=out[i].actor)
    out[k] = _payload(out[k], approved_by=out[i].actor)
    out[k] = dataclasses.replace(out[k], actor=out[i].actor)
    return rehash(out), pools


def letter_prize(records: Records, pools: Pools) -> tuple[Records, Pools]:
    i = _index(records, lambda r: r.kind == Kind.LETTER)
    forged = _payload(records[i], prize="R99999", value_cents=9_999_900)
    records = [*records[:i], forged, *records[i + 1 :]]
    return rehash(records), pools


TAMPERS: dict[str, Tamper] = {
    "pool-byte": pool_byte,
    "pool-garbage": pool_garbage,
    "claim-prize-rehashed": claim_prize,
    "redraw-removed-rehashed": redraw_removed,
    "winner-swapped-rehashed": winner_swapped,
    "seed-replaced-rehashed": seed_replaced,
    "exclusion-after-the-pick-rehashed": exclusion_after_pick,
    "exclusion-unapproved-rehashed": exclusion_unapproved,
    "exclusion-self-approved-rehashed": self_approved,
    "letter-prize-rehashed": letter_prize,
}


def _pools(files: Pools) -> dict[str, Pool]:
    return {c: parse_pool(raw) for c, raw in files.items()}


def write_export(folder: Path, records: Records, files: Pools) -> None:
    (folder / "pools").mkdir(parents=True)
    (folder / "audit.jsonl").write_text(to_jsonl(records), encoding="utf-8")
    for commitment, raw in files.items():
        (folder / "pools" / f"{commitment}.pool").write_bytes(raw)


def write_corpus(folder: Path, records: Records, pools: dict[str, Pool]) -> list[str]:
    """The untouched export and each tamper, each in its own folder; returns the names."""
    scratch = folder / "_pools"
    write_pools(pools, scratch)
    files = {p.name.removesuffix(".pool"): p.read_bytes() for p in scratch.glob("*.pool")}
    write_export(folder / "untouched", records, files)
    for name, tamper in TAMPERS.items():
        write_export(folder / name, *tamper(list(records), dict(files)))
    return ["untouched", *TAMPERS]
