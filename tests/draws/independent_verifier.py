"""Independent verifier of one bonusd draw, written from docs/fairness.md alone.

No other file of the project was read to write it; it needs only the Python 3.11
standard library.  Run it on an export (`bonusd audit export FILE --pools DIR`):

    python3 independent_verifier.py --export audit.jsonl --pools pools/ DRAW_ID

It checks the hash chain (section 7), the seed and pool commitments, recomputes the
pick stream of every electronic round (sections 2-5), the once-per-draw rule, the
sealed reveals (section 6) and the trail rules of section 11.  It prints one line per
problem (naming the record `seq`, the export line or the file), then `OK` or `FAILED`.
Exit status: 0 everything verifies, 1 something failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import hmac
import json
import os
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime

MAX_LINES = 200
FIELDS = {"seq", "time", "actor", "kind", "payload", "prev_hash", "hash"}
KINDS = {
    "commitment",
    "pool",
    "pick",
    "redraw",
    "claim",
    "proxy",
    "letter",
    "seed_reveal",
    "exclusion",
    "seat",
    "rule_change",
    "override",
    "prizes",
    "decline",
    "exception",
    "request",
    "approval",
    "digest",
}
TIME_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
HEX_RE, NUM_RE = re.compile(r"[0-9a-f]{64}"), re.compile(r"0|[1-9][0-9]*")
POOL_HEAD = re.compile(
    r"bonusd-pool-v1 draw=([^\s:=]+) tombola=([^\s:=]+) "
    r"round=(0|[1-9][0-9]*) members=(0|[1-9][0-9]*) tickets=(0|[1-9][0-9]*)"
)
POOL_LINE = re.compile(r"([^\s:=]+):([1-9][0-9]*)")
STR, INT, HEX, TIME, LIST, OBJ = "str", "int", "hex64", "time", "list", "object"
SCHEMA: dict[str, dict[str, str]] = {  # section 7, payload table
    "commitment": {"tombola": STR, "round": INT, "seed_commitment": HEX},
    "pool": {"tombola": STR, "round": INT, "pool_commitment": HEX, "members": INT, "tickets": INT},
    "pick": {"tombola": STR, "round": INT, "number": INT, "ticket": INT, "card": STR},
    "redraw": {"tombola": STR, "round": INT, "number": INT, "ticket": INT, "card": STR},
    "claim": {"card": STR, "claim": STR, "action": STR, "from": STR, "to": STR, "detail": OBJ},
    "seed_reveal": {"tombola": STR, "round": INT, "seed": HEX},
    "exclusion": {"card": STR, "note": STR},
    "seat": {"card": STR, "board": STR},
    "prizes": {"tombola": STR, "round": INT, "prizes": LIST, "reveals_commitment": HEX},
    "letter": {
        "claim": STR,
        "number": STR,
        "winner": STR,
        "presenter": STR,
        "prize": STR,
        "value_cents": INT,
        "issued_at": TIME,
        "expires_at": TIME,
    },
    "proxy": {"card": STR, "proxy_id": STR, "name": STR},
    "request": {"request": INT, "change": STR, "reason": STR},
    "approval": {"request": INT, "change": STR, "decision": STR, "requested_by": STR},
    "exception": {"note": STR},
}
OPTIONAL = {
    "request": INT,
    "requested_by": STR,
    "approved_by": STR,
    "seed_commitment": HEX,
    "floor_sha256": HEX,
    "tombola": STR,
    "round": INT,
    "bin_closes": STR,
}
DETAIL = {
    "present": {"presenter": STR},
    "pick_reveal": {"reveal": STR, "prize": STR},
    "issue_letter": {"letter": STR},
    "redeem": {"letter": STR},
    "lapse": {"letter": STR},
    "created": {"tombola": STR, "round": STR, "pick": STR, "deadline": TIME},
}  # draw claims
REASONS = ("already_picked", "excluded", "seated")
NOBODY = "nobody left to redraw"


def clean(value: object, limit: int = 120) -> str:
    """Text safe to print: control and format characters escaped, long values cut."""
    text = value if isinstance(value, str) else repr(value)
    out = "".join(
        (
            f"\\x{ord(char):02x}"
            if ord(char) < 0x100
            else f"\\u{ord(char):04x}"
            if ord(char) < 0x10000
            else f"\\U{ord(char):08x}"
        )
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs")
        else char
        for char in text
    )
    return out if len(out) <= limit else out[:limit] + "..."


class Report(list):
    """Problem lines; at most MAX_LINES of them are printed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def add(self, where: str, message: str) -> None:
        line = f"{where}: {message}"
        if line not in self.seen:  # the same problem found twice is printed once
            self.seen.add(line)
            self.append(line)

    def emit(self) -> int:
        for line in self[:MAX_LINES]:
            print(line)
        if len(self) > MAX_LINES:
            print(f"... and {len(self) - MAX_LINES} more problems not shown")
        print("FAILED" if self else "OK")
        return 1 if self else 0


@dataclass
class Rec:
    pos: int  # trail order: "before" and "after" (section 11)
    seq: object
    kind: str
    actor: str
    payload: dict

    @property
    def where(self) -> str:
        return f"seq {clean(self.seq)}"

    def get(self, key: str) -> object:
        return self.payload.get(key)


def canonical(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _no_float(text: str) -> object:
    raise ValueError(f"non-integer number {text}")  # section 7: never floats


def parse_line(raw: bytes, lineno: int, report: Report) -> dict | None:
    try:
        obj = json.loads(raw.decode("utf-8"), parse_float=_no_float, parse_constant=_no_float)
        if not isinstance(obj, dict):
            raise ValueError("not a JSON object")
        if canonical(obj) != raw:
            report.add(f"export line {lineno}", "not the canonical JSON of its record")
        return obj
    except (ValueError, UnicodeError) as err:
        report.add(f"export line {lineno}", f"unreadable record ({clean(str(err))})")
        return None


def load_chain(path: str, report: Report) -> list[Rec]:
    """Section 7: seq, prev_hash, hash, time order, canonical JSON, record shape."""
    with open(path, "rb") as handle:
        data = handle.read()
    if data and not data.endswith(b"\n"):
        report.add("export", "last line does not end in LF")
    recs: list[Rec] = []
    prev_hash, expect, last_time = "0" * 64, 1, ""
    for lineno, raw in enumerate(
        data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n"), 1
    ):
        obj = parse_line(raw, lineno, report)
        if obj is None:
            continue
        seq, stamp = obj.get("seq"), obj.get("time")
        where = f"seq {clean(seq)} (line {lineno})"
        if set(obj) != FIELDS or obj.get("kind") not in KINDS:
            report.add(
                where,
                f"record fields {clean(sorted(obj))} or kind "
                f"{clean(obj.get('kind'))} not as in section 7",
            )
        if seq != expect:
            report.add(where, f"seq out of order, expected {expect} (missing, moved or extra)")
        expect = seq + 1 if type(seq) is int else expect + 1
        if obj.get("prev_hash") != prev_hash:
            report.add(where, "prev_hash is not the previous record's hash (chain broken)")
        try:
            body = canonical({key: val for key, val in obj.items() if key != "hash"})
        except UnicodeError:
            body = b""
        if hashlib.sha256(body).hexdigest() != obj.get("hash"):
            report.add(where, "hash does not match the record (record modified)")
        prev_hash = obj.get("hash")
        if not valid_time(stamp):
            report.add(where, f"bad time {clean(stamp)}")
        elif stamp < last_time:
            report.add(where, f"time {stamp} is before the previous record's {last_time}")
        else:
            last_time = stamp
        if isinstance(obj.get("payload"), dict) and isinstance(obj.get("actor"), str):
            recs.append(Rec(len(recs), seq, str(obj.get("kind")), obj["actor"], obj["payload"]))
        else:
            report.add(where, "payload is not an object or actor not a string")
    return recs


def valid_time(text: object) -> bool:
    try:
        return bool(
            isinstance(text, str)
            and TIME_RE.fullmatch(text)
            and datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
        )
    except ValueError:
        return False


def type_ok(value: object, kind: str) -> bool:
    return {
        STR: isinstance(value, str),
        INT: type(value) is int,
        LIST: isinstance(value, list),
        HEX: isinstance(value, str) and bool(HEX_RE.fullmatch(value)),
        TIME: valid_time(value),
        OBJ: isinstance(value, dict),
    }[kind]


def schema_problems(rec: Rec) -> list[str]:
    """The payload types of section 7 for the records the checks use."""
    want = dict(SCHEMA.get(rec.kind, {}))
    if rec.kind in ("pick", "redraw") and rec.get("manual") is not True:
        want.update(counter=INT, passed_over=LIST)
    out = [
        f"{key} missing or not {kind}"
        for key, kind in want.items()
        if not type_ok(rec.get(key), kind)
    ]
    out += [
        f"{key} is not {kind}"
        for key, kind in OPTIONAL.items()
        if key in rec.payload and key not in want and not type_ok(rec.get(key), kind)
    ]
    detail = rec.get("detail") if rec.kind == "claim" else None
    if (
        isinstance(detail, dict)
        and isinstance(rec.get("claim"), str)
        and isinstance(rec.get("action"), str)
    ):
        raps = rec.get("claim").startswith("RAPS claim ")
        needs = (
            {"pick": STR}
            if raps and rec.get("action") == "created"
            else DETAIL.get(rec.get("action"), {})
        )
        out += [
            f"detail {key} missing or not {kind}"
            for key, kind in needs.items()
            if not type_ok(detail.get(key), kind)
        ]
        out += ["claim detail values must be strings"] * (
            not all(isinstance(val, str) for val in detail.values())
        )
    items = rec.get("passed_over") if "counter" in want else None
    out += [
        f"malformed passed_over entry {clean(item)}"
        for item in (items if isinstance(items, list) else [])
        if not (
            isinstance(item, dict)
            and type(item.get("counter")) is int
            and type(item.get("ticket")) is int
            and isinstance(item.get("card"), str)
            and item.get("reason") in REASONS
        )
    ]
    if rec.kind == "prizes" and isinstance(rec.get("prizes"), list):
        out += ["prizes must be [label, cents] pairs"] * (
            not all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and type(p[1]) is int
                for p in rec.get("prizes")
            )
        )
    return out


def str_int(value: object) -> int | None:
    return int(value) if isinstance(value, str) and NUM_RE.fullmatch(value) else None


def actor_name(actor: str) -> str:
    return actor.split(" (", 1)[0]  # rule 3: the actor text up to " ("


@dataclass
class Pool:
    draw: str
    tombola: str
    round: int
    cards: list[str]
    cum: list[int]  # cumulative ticket counts (section 4)

    @property
    def total(self) -> int:
        return self.cum[-1] if self.cum else 0

    def owner(self, index: int) -> str:
        return self.cards[bisect.bisect_right(self.cum, index)]


def parse_pool(data: bytes) -> Pool:
    """Section 2, strictly: header, sorted unique cards, counts, LF endings."""
    if data.startswith(b"\xef\xbb\xbf") or b"\r" in data or not data.endswith(b"\n"):
        raise ValueError("BOM, CR or no final LF")
    lines = data.decode("utf-8")[:-1].split("\n")
    head = POOL_HEAD.fullmatch(lines[0])
    if not head:
        raise ValueError(f"bad header {clean(lines[0])}")
    cards: list[str] = []
    cum: list[int] = []
    for number, line in enumerate(lines[1:], 2):
        match = POOL_LINE.fullmatch(line)
        if not match or (cards and match.group(1) <= cards[-1]):
            raise ValueError(f"line {number} malformed or out of code-point order")
        cards.append(match.group(1))
        cum.append((cum[-1] if cum else 0) + int(match.group(2)))
    pool = Pool(head.group(1), head.group(2), int(head.group(3)), cards, cum)
    if int(head.group(4)) != len(cards) or int(head.group(5)) != pool.total:
        raise ValueError("header members/tickets do not match the member lines")
    return pool


def stream_prefix(draw_id: str, tombola: str, digest: bytes) -> bytes:
    draw_b, tomb_b = draw_id.encode(), tombola.encode()
    return (
        b"bonusd-pick-v1"
        + len(draw_b).to_bytes(2, "big")
        + draw_b
        + len(tomb_b).to_bytes(2, "big")
        + tomb_b
        + digest
    )


def next_draw(seed: bytes, prefix: bytes, total: int, start: int) -> tuple[int, int]:
    """Section 3: the first accepted (counter, value in [0, total)) from counter start."""
    bits, counter = (total - 1).bit_length(), start
    while True:
        block = hmac.new(seed, prefix + counter.to_bytes(8, "big"), hashlib.sha256).digest()
        value = int.from_bytes(block, "big") >> (256 - bits)
        if value < total:
            return counter, value
        counter += 1


def reveal_text(draw_id: str, tombola: str, rnd: int, prizes: list) -> bytes:
    body = "".join(f"{cents}\t{label}\n" for label, cents in prizes)
    return f"bonusd-reveals-v1 {draw_id} {tombola}-{rnd}\n{body}".encode()


def shuffle(seed: bytes, draw_id: str, key: tuple, prizes: list, commitment: str) -> list:
    """Section 6: Fisher-Yates driven by one forward-only stream (counter never reset)."""
    order, counter = list(prizes), 0
    prefix = stream_prefix(draw_id, f"reveals-{key[0]}-{key[1]}", bytes.fromhex(commitment))
    for top in range(len(order) - 1, 0, -1):
        used, pick = next_draw(seed, prefix, top + 1, counter)
        counter = used + 1
        order[top], order[pick] = order[pick], order[top]
    return order


@dataclass
class Round:
    key: tuple  # (tombola, round)
    commits: list[Rec] = field(default_factory=list)
    pools: list[Rec] = field(default_factory=list)
    picks: list[Rec] = field(default_factory=list)
    reveals: list[Rec] = field(default_factory=list)
    prizes: list[Rec] = field(default_factory=list)
    pool: Pool | None = None
    seed: bytes | None = None
    seed_pos: int | None = None

    @property
    def label(self) -> str:
        return f"round {clean(self.key[0])}-{clean(self.key[1])}"


@dataclass
class Claim:
    label: str
    card: str
    key: tuple | None
    state: str
    events: list[Rec] = field(default_factory=list)
    revealed: list[list] = field(default_factory=list)  # [pos, label, cents or None]


ROUND_LISTS = {
    "commitment": "commits",
    "pool": "pools",
    "seed_reveal": "reveals",
    "prizes": "prizes",
    "pick": "picks",
    "redraw": "picks",
}
MARKS = {
    "pick": "already_picked",
    "redraw": "already_picked",
    "exclusion": "excluded",
    "seat": "seated",
}


class DrawCheck:
    """Sections 2-6 and 11 for the records whose payload's draw_id is the draw."""

    def __init__(self, draw_id: str, recs: list[Rec], pools_dir: str, report: Report):
        self.draw_id, self.dir, self.report, self.all = draw_id, pools_dir, report, recs
        self.recs: list[Rec] = []
        for rec in (rec for rec in recs if rec.get("draw_id") == draw_id):
            problems = schema_problems(rec)
            for problem in problems:
                report.add(rec.where, f"{rec.kind} record: {problem}")
            self.recs += [rec] * (not problems)
        self.rounds: dict[tuple, Round] = {}
        self.marks: dict[str, dict[object, list[int]]] = {reason: {} for reason in REASONS}
        for rec in self.recs:
            if rec.kind in ROUND_LISTS:
                key = (rec.get("tombola"), rec.get("round"))
                getattr(self.rounds.setdefault(key, Round(key)), ROUND_LISTS[rec.kind]).append(rec)
            if rec.kind in MARKS:
                self.marks[MARKS[rec.kind]].setdefault(rec.get("card"), []).append(rec.pos)
        self.picks = [rec for rec in self.recs if rec.kind in ("pick", "redraw")]  # draw order
        pools = [rec.pos for rec in self.recs if rec.kind == "pool"]
        self.freeze = pools[0] if pools else None  # rule 1
        self.claims: dict[str, Claim] = {}
        self.claimed: dict[int, str] = {}

    def add(self, rec: Rec, message: str) -> None:
        self.report.add(rec.where, message)

    def barred(self, card: object, pos: int) -> set[str]:
        """Why `card` may not be picked at trail position `pos` (section 4)."""
        return {
            reason
            for reason, table in self.marks.items()
            if any(p < pos for p in table.get(card, ()))
        }

    def run(self) -> None:
        if not self.recs:
            self.report.add("export", f"no valid records of draw {clean(self.draw_id)}")
            return
        self.check_seeds()
        self.load_pools()
        for rnd in self.rounds.values():
            self.check_round(rnd)
        for rec in self.picks:  # once per draw; rule 9 for manual picks
            bars = self.barred(rec.get("card"), rec.pos)
            if bars:
                self.add(
                    rec,
                    f"picks card {clean(rec.get('card'))}, which was "
                    f"{' and '.join(sorted(bars))} before it",
                )
        self.check_requests()
        for rec in (rec for rec in self.recs if rec.kind == "claim"):
            self.check_claim(rec)
        for rec in self.picks:
            if rec.pos not in self.claimed:
                self.add(
                    rec,
                    f"pick {rec.get('number')} of round {clean(rec.get('tombola'))}-"
                    f"{rec.get('round')} has no claim",
                )
        self.check_no_shows()
        self.check_reveals()
        self.check_letters()

    def check_seeds(self) -> None:
        """Sections 1, 5.1, 12: one commitment, before the pool; the reveal matches it."""
        seen: dict[object, Rec] = {}
        raps = [rec for rnd in self.rounds.values() if rnd.key[0] == "raps" for rec in rnd.reveals]
        for rnd in self.rounds.values():
            for extra in rnd.commits[1:] + rnd.pools[1:]:
                self.add(extra, f"second {extra.kind} record for {rnd.label}")
            commits = rnd.commits
            if rnd.key[0] == "raps":  # one seed per jackpot, committed as round 1
                commits = self.rounds[("raps", 1)].commits if ("raps", 1) in self.rounds else []
            elif (
                commits
                and seen.setdefault(commits[0].get("seed_commitment"), commits[0]) is not commits[0]
            ):
                self.add(commits[0], "same seed commitment as another round")
            electronic = [p for p in rnd.picks if p.get("manual") is not True]
            if not commits:
                unseeded = rnd.pools if len(electronic) == len(rnd.picks) else []
                for rec in (rnd.reveals + rnd.prizes + electronic + unseeded)[:1]:
                    self.add(rec, f"{rnd.label} has no seed commitment")
                continue
            digest = commits[0].get("seed_commitment")
            if rnd.pools and commits[0].pos > rnd.pools[0].pos:
                self.add(commits[0], f"seed committed after the pool record {rnd.pools[0].where}")
            if rnd.pools and rnd.pools[0].get("seed_commitment") not in (None, digest):
                self.add(rnd.pools[0], f"seed_commitment differs from {commits[0].where}")
            for rev in raps if rnd.key[0] == "raps" else rnd.reveals:
                seed = bytes.fromhex(rev.get("seed"))
                if hashlib.sha256(seed).hexdigest() != digest:
                    self.add(rev, f"revealed seed does not match the commitment {commits[0].where}")
                elif rnd.seed is None:
                    rnd.seed, rnd.seed_pos = seed, rev.pos
            for rec in rnd.picks + rnd.prizes:
                if rnd.seed_pos is not None and rec.pos > rnd.seed_pos:
                    self.add(rec, f"{rec.kind} of {rnd.label} after its seed was revealed")

    def load_pools(self) -> None:
        """Section 2 and rule 10: every pool file of the draw, named by its commitment."""
        ours: dict[object, list[Round]] = {}
        for rnd in (rnd for rnd in self.rounds.values() if rnd.pools):
            ours.setdefault(rnd.pools[0].get("pool_commitment"), []).append(rnd)
        for digest, rounds in ours.items():
            data = self.read(f"{digest}.pool", f"; pool record {rounds[0].pools[0].where}")
            pool = self.parse(f"{digest}.pool", data, digest) if data is not None else None
            for rnd in rounds if pool else []:
                header = (pool.draw, pool.tombola, pool.round, len(pool.cards), pool.total)
                wanted = (
                    self.draw_id,
                    *rnd.key,
                    rnd.pools[0].get("members"),
                    rnd.pools[0].get("tickets"),
                )
                if header != wanted:
                    self.add(rnd.pools[0], f"pool file has {clean(header)}, not {clean(wanted)}")
                rnd.pool = pool if header == wanted else None
                for reason in ("excluded", "seated") if rnd.pool else ():  # left out at freeze
                    for card in set(pool.cards) & set(self.marks[reason]):
                        if min(self.marks[reason][card]) < self.freeze:
                            self.add(
                                rnd.pools[0],
                                f"pool holds {clean(card)}, {reason} before the freeze",
                            )
        for rec in (rnd.pools[0] for rnd in self.rounds.values() if rnd.pools):
            name = f"{self.draw_id}.{rec.get('round')}.floor"  # RAPS snapshot (section 10)
            data = (
                self.read(name, f"; pool record {rec.where}")
                if "floor_sha256" in rec.payload
                else None
            )
            if data is not None and hashlib.sha256(data).hexdigest() != rec.get("floor_sha256"):
                self.report.add(f"file {clean(name)}", f"is not the floor_sha256 of {rec.where}")
        named = {str(rec.get("pool_commitment")) for rec in self.all if rec.kind == "pool"}
        try:
            names = sorted(os.listdir(self.dir))
        except OSError as err:
            self.report.add(f"pools folder {clean(self.dir)}", f"cannot be listed ({clean(err)})")
            return
        for name in (n for n in names if n.endswith(".pool") and n[:-5] not in ours):
            data = self.read(name, "", quiet=name[:-5] in named)  # another draw's file
            head = POOL_HEAD.match(data.decode("utf-8", "replace")) if data is not None else None
            if data is not None and head is None and name[:-5] not in named:
                self.report.add(f"file {clean(name)}", "unreadable pool file, no pool record")
            elif head and head.group(1) == self.draw_id:
                self.report.add(
                    f"file {clean(name)}",
                    "pool file of this draw named by no pool record of the draw",
                )

    def read(self, name: str, note: str, quiet: bool = False) -> bytes | None:
        try:
            with open(os.path.join(self.dir, name), "rb") as handle:
                return handle.read()
        except OSError as err:
            if not quiet:
                self.report.add(
                    f"file {clean(name)}", f"cannot be read ({clean(err.strerror)}){note}"
                )
            return None

    def parse(self, name: str, data: bytes, digest: str) -> Pool | None:
        actual = hashlib.sha256(data).hexdigest()
        if actual != digest:
            self.report.add(f"file {name}", f"content hash {actual} is not its commitment")
            return None
        try:
            return parse_pool(data)
        except (ValueError, UnicodeError) as err:
            self.report.add(f"file {name}", f"malformed pool file ({clean(str(err))})")
            return None

    def check_round(self, rnd: Round) -> None:
        """Numbers, pool before picks, manual tickets (rule 9), then the stream."""
        manual = [rec for rec in rnd.picks if rec.get("manual") is True]
        electronic = [rec for rec in rnd.picks if rec.get("manual") is not True]
        if manual and electronic:
            self.add(rnd.picks[0], f"{rnd.label} mixes manual and electronic picks")
        for number, rec in enumerate(rnd.picks, 1):
            if rec.get("number") != number:
                self.add(rec, f"pick number {rec.get('number')} in {rnd.label}, expected {number}")
        if rnd.picks and (not rnd.pools or rnd.picks[0].pos < rnd.pools[0].pos):
            self.add(rnd.picks[0], f"pick of {rnd.label} before its pool record")
        if rnd.picks and rnd.pool is None:
            self.add(rnd.picks[0], f"picks of {rnd.label} not recomputed: no readable pool file")
            return
        for rec in manual:
            ticket = rec.get("ticket")
            if not 1 <= ticket <= rnd.pool.total or rnd.pool.owner(ticket - 1) != rec.get("card"):
                self.add(
                    rec,
                    f"manual ticket {ticket} is not card {clean(rec.get('card'))}'s on "
                    f"the printed list",
                )
        if electronic and rnd.seed is None:
            self.add(
                electronic[0],
                f"{rnd.label}: no revealed seed matching its commitment; picks not recomputed",
            )
        elif electronic and rnd.pool.total == 0:
            self.add(electronic[0], f"{rnd.label}: picks from an empty pool")
        elif electronic:
            self.check_stream(rnd, electronic)

    def check_stream(self, rnd: Round, picks: list[Rec]) -> None:
        """Section 5.3-5.4: every pass-over and pick is the next draw of the stream."""
        pool, counter = rnd.pool, 0
        prefix = stream_prefix(
            self.draw_id, rnd.key[0], bytes.fromhex(rnd.pools[0].get("pool_commitment"))
        )
        for rec in picks:
            entries = [(item, item["reason"]) for item in rec.get("passed_over")]
            for item, reason in [*entries, (rec.payload, None)]:
                used, value = next_draw(rnd.seed, prefix, pool.total, counter)
                counter, owner = used + 1, pool.owner(value)
                got = (item.get("counter"), item.get("ticket"), item.get("card"))
                if got != (used, value + 1, owner):
                    self.add(
                        rec,
                        f"{rnd.label}, {'a pass-over before ' * bool(reason)}pick "
                        f"{rec.get('number')}: expected counter {used} ticket "
                        f"{value + 1} card {clean(owner)}, recorded counter "
                        f"{clean(got[0])} ticket {clean(got[1])} card {clean(got[2])};"
                        f" rest of the round not recomputed",
                    )
                    return
                if reason and reason not in self.barred(owner, rec.pos):  # rule 2
                    self.add(
                        rec,
                        f"card {clean(owner)} passed over at counter {used} as "
                        f"{reason}, but no earlier record says so",
                    )

    def check_requests(self) -> None:
        """Rules 3 and 4: four eyes after the freeze, approvals, early close."""
        asked: dict[object, Rec] = {}
        decided: dict[object, Rec] = {}
        used: dict[object, Rec] = {}
        for rec in self.recs:
            after = self.freeze is not None and rec.pos > self.freeze
            if rec.kind == "request":
                if rec.get("request") != len(asked) + 1:
                    self.add(rec, f"request {rec.get('request')}, expected {len(asked) + 1}")
                asked.setdefault(rec.get("request"), rec)
            elif rec.kind == "approval":
                self.check_approval(rec, asked.get(rec.get("request")), decided)
            elif rec.kind in ("exclusion", "proxy"):
                daemon = rec.kind == "exclusion" and rec.actor.endswith(" (system)")
                if (after and not daemon) or "request" in rec.payload:
                    self.check_change(rec, rec.kind, asked, decided, used)
            elif rec.kind == "exception" and rec.get("change") == "early_close":
                if after:
                    self.add(rec, "early close recorded after the draw's first pool record")
                self.check_change(rec, "early_close", asked, decided, used)
                try:
                    closes = datetime.fromisoformat(rec.get("bin_closes"))
                    if closes.tzinfo is None:
                        raise ValueError("no offset")
                except (TypeError, ValueError):
                    self.add(rec, f"early close with bad bin_closes {clean(rec.get('bin_closes'))}")

    def check_approval(self, rec: Rec, asked: Rec | None, decided: dict) -> None:
        number = rec.get("request")
        if asked is None or number in decided:
            self.add(rec, f"approval of request {number}, not made before it or already decided")
            return
        decided[number] = rec
        if rec.get("decision") not in ("approved", "refused"):
            self.add(rec, f"decision {clean(rec.get('decision'))} is not approved or refused")
        if rec.get("change") != asked.get("change") or rec.get("requested_by") != asked.actor:
            self.add(rec, f"approval does not match request {number} ({asked.where})")
        if actor_name(rec.actor) == actor_name(asked.actor):
            self.add(
                rec, f"request {number} decided by its requester {clean(actor_name(rec.actor))}"
            )

    def check_change(self, rec: Rec, change: str, asked: dict, decided: dict, used: dict) -> None:
        number = rec.get("request")
        request, approval = asked.get(number), decided.get(number)
        if request is None:
            self.add(rec, f"{change} names no earlier request ({clean(number)})")
            return
        fields = {"exclusion": ("card",), "proxy": ("card", "proxy_id", "name")}.get(change, ())
        if request.get("change") != change or any(request.get(k) != rec.get(k) for k in fields):
            self.add(rec, f"{change} does not match request {number} ({request.where})")
        if approval is None or approval.get("decision") != "approved":
            self.add(rec, f"{change} rests on request {number}, not approved before it")
            return
        if actor_name(approval.actor) == actor_name(request.actor):
            self.add(rec, f"{change}: request {number} approved by its own requester")
        if (rec.get("requested_by"), rec.get("approved_by")) != (request.actor, approval.actor):
            self.add(
                rec,
                f"{change}: requested_by/approved_by are not the actors of "
                f"{request.where} and {approval.where}",
            )
        if number in used:
            self.add(rec, f"approval of request {number} already used by {used[number].where}")
        used.setdefault(number, rec)

    def check_claim(self, rec: Rec) -> None:
        """Rule 5 (claims follow picks, one per pick) and each claim's state story."""
        label, claim = rec.get("claim"), self.claims.get(rec.get("claim"))
        if rec.get("action") == "created":
            if rec.get("from") != "":
                self.add(rec, f"{clean(label)} created from {clean(rec.get('from'))}, not ''")
            self.create_claim(rec, label, rec.get("detail"))
        elif claim is None:
            self.add(rec, f"{clean(label)} was not created before")
        else:
            if rec.get("card") != claim.card:
                self.add(
                    rec,
                    f"{clean(label)} names card {clean(rec.get('card'))}, created for "
                    f"{clean(claim.card)}",
                )
            if rec.get("from") != claim.state:
                self.add(
                    rec,
                    f"{clean(label)} moves from {clean(rec.get('from'))}, but it was "
                    f"{clean(claim.state)}",
                )
            claim.state = rec.get("to")
            claim.events.append(rec)
            who = rec.get("detail").get("presenter")
            if (
                rec.get("action") == "present"
                and who != "winner"
                and not any(
                    p.kind == "proxy"
                    and p.pos < rec.pos
                    and p.get("card") == claim.card
                    and p.get("proxy_id") == who
                    for p in self.recs
                )
            ):
                self.add(rec, f"{clean(label)} presented by {clean(who)}: no earlier proxy record")

    def create_claim(self, rec: Rec, label: str, detail: dict) -> None:
        if label in self.claims:
            self.add(rec, f"{clean(label)} created a second time")
            return
        number, key = str_int(detail.get("pick")), None
        if not label.startswith("RAPS claim "):  # a draw claim: numbered, names its round
            count = sum(1 for name in self.claims if not name.startswith("RAPS claim ")) + 1
            if label != f"claim {count}":
                self.add(rec, f"claim label {clean(label)}, expected 'claim {count}'")
            key = (detail.get("tombola"), str_int(detail.get("round")))
        target = None
        for pick in self.picks:
            if (
                pick.pos < rec.pos
                and pick.get("number") == number
                and key in (None, (pick.get("tombola"), pick.get("round")))
            ):
                target = pick
        if target is None:
            self.add(rec, f"{clean(label)} names no earlier pick (detail {clean(detail)})")
        elif target.get("card") != rec.get("card"):
            self.add(
                rec,
                f"{clean(label)} is for card {clean(rec.get('card'))}, but "
                f"{target.where} picked {clean(target.get('card'))}",
            )
        elif target.pos in self.claimed:
            self.add(
                rec,
                f"second claim for the pick of {target.where} "
                f"(first {clean(self.claimed[target.pos])})",
            )
        else:
            self.claimed[target.pos] = label
        found = (target.get("tombola"), target.get("round")) if target else None
        self.claims[label] = Claim(label, rec.get("card"), found, rec.get("to"))

    def check_no_shows(self) -> None:
        """Rule 6: each no-show is followed by one redraw (or 'nobody left to redraw')."""
        pending: dict[tuple, list[Rec]] = {}
        for rec in self.recs:
            key = (rec.get("tombola"), rec.get("round"))
            nobody = rec.kind == "exception" and NOBODY in rec.get("note")
            if rec.kind == "claim" and rec.get("to") == "no_show" and rec.get("from") != "":
                claim = self.claims.get(rec.get("claim"))
                if claim and claim.key and claim.key[0] != "raps":
                    pending.setdefault(claim.key, []).append(rec)
            elif rec.kind == "redraw" and key[0] != "raps" and not pending.get(key):
                self.add(
                    rec,
                    f"redraw without an earlier no-show in round {clean(key[0])}-{clean(key[1])}",
                )
            if nobody:
                self.check_nobody_left(rec, key)
            if pending.get(key) and (
                rec.kind == "redraw" or nobody or (rec.kind == "pick" and rec.get("manual") is True)
            ):
                pending[key].pop(0)
        for rec in (rec for queue in pending.values() for rec in queue):
            self.add(
                rec,
                f"no-show of {clean(rec.get('claim'))} is not followed by a redraw or "
                f"a '{NOBODY}' exception",
            )

    def check_nobody_left(self, rec: Rec, key: tuple) -> None:
        rnd = self.rounds.get(key)
        free = (
            [card for card in rnd.pool.cards if not self.barred(card, rec.pos)]
            if (rnd and rnd.pool)
            else None
        )
        if free is None:
            self.add(rec, f"'{NOBODY}' for no round with a readable pool")
        elif free:
            self.add(
                rec,
                f"says {NOBODY}, but {len(free)} pool members could still be picked "
                f"(first {clean(free[0])})",
            )

    def check_reveals(self) -> None:
        """Rule 7 and section 6: reveal commitment, shuffle with the round's seed."""
        orders: dict[int, list | None] = {}
        for rnd in self.rounds.values():
            for rec in rnd.prizes:
                digest = rec.get("reveals_commitment")
                text = reveal_text(self.draw_id, rnd.key[0], rnd.key[1], rec.get("prizes"))
                good = hashlib.sha256(text).hexdigest() == digest
                if not good:
                    self.add(rec, "reveals_commitment is not the SHA-256 of the prize set")
                orders[rec.pos] = (
                    shuffle(rnd.seed, self.draw_id, rnd.key, rec.get("prizes"), digest)
                    if good and rnd.seed
                    else None
                )
        used: dict[tuple, Rec] = {}
        for claim in self.claims.values():
            for rec in (ev for ev in claim.events if ev.get("action") == "pick_reveal"):
                self.check_reveal(claim, rec, used, orders)

    def check_reveal(self, claim: Claim, rec: Rec, used: dict, orders: dict) -> None:
        rnd = self.rounds.get(claim.key) if claim.key else None
        prizes = [p for p in rnd.prizes if p.pos < rec.pos] if rnd else []
        detail = rec.get("detail")
        entry = [rec.pos, detail.get("prize"), None]
        claim.revealed.append(entry)
        if not prizes:
            self.add(
                rec,
                f"{clean(claim.label)} picks a reveal, but "
                f"{rnd.label + ' has no prizes record' if rnd else 'has no pick'}",
            )
            return
        number, count = str_int(detail.get("reveal")), len(prizes[-1].get("prizes"))
        if number is None or not 1 <= number <= count:
            self.add(rec, f"reveal {clean(detail.get('reveal'))} is not in 1..{count}")
            return
        if (claim.key, number) in used:
            self.add(
                rec,
                f"reveal {number} of {rnd.label} already picked at "
                f"{used[(claim.key, number)].where}",
            )
        used.setdefault((claim.key, number), rec)
        if rnd.seed_pos is not None and rec.pos > rnd.seed_pos:
            self.add(rec, f"reveal picked after the seed of {rnd.label} was published")
        order = orders.get(prizes[-1].pos)
        if order is None:
            self.add(
                rec,
                f"reveal not checked: {rnd.label} has no valid revealed seed or reveal commitment",
            )
        elif order[number - 1][0] != detail.get("prize"):
            self.add(
                rec,
                f"{clean(claim.label)}: reveal {number} holds "
                f"{clean(order[number - 1][0])} by the seed's shuffle, recorded "
                f"{clean(detail.get('prize'))}",
            )
        else:
            entry[2] = order[number - 1][1]

    def check_letters(self) -> None:
        """Rule 8: a letter pays what its claim revealed, to whom presented it."""
        for rec in (r for r in self.recs if r.kind == "letter"):
            claim = self.claims.get(rec.get("claim"))
            shown = [entry for entry in claim.revealed if entry[0] < rec.pos] if claim else []
            if not shown:
                self.add(
                    rec, f"letter for {clean(rec.get('claim'))}, which revealed no prize before it"
                )
                continue
            if rec.get("prize") != shown[-1][1]:
                self.add(
                    rec,
                    f"letter pays {clean(rec.get('prize'))}, but {clean(claim.label)}"
                    f" revealed {clean(shown[-1][1])}",
                )
            elif shown[-1][2] is not None and rec.get("value_cents") != shown[-1][2]:
                self.add(
                    rec,
                    f"letter value {rec.get('value_cents')} cents, the revealed prize "
                    f"is {shown[-1][2]}",
                )
            present = [e for e in claim.events if e.get("action") == "present" and e.pos < rec.pos]
            who = present[-1].get("detail").get("presenter") if present else "winner"
            if (rec.get("winner"), rec.get("presenter")) != (
                claim.card,
                claim.card if who == "winner" else who,
            ):
                self.add(
                    rec,
                    f"letter winner/presenter {clean(rec.get('winner'))}/"
                    f"{clean(rec.get('presenter'))} are not the claim's",
                )
            if not any(
                e.get("action") == "issue_letter"
                and e.get("detail").get("letter") == rec.get("number")
                for e in claim.events
            ):
                self.add(rec, f"letter {clean(rec.get('number'))} was not issued on its claim")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Verify one bonusd draw from an export.")
    parser.add_argument("--export", required=True, help="the audit trail, JSON Lines")
    parser.add_argument("--pools", required=True, help="folder of <pool hash>.pool files")
    parser.add_argument("draw_id", help="the draw id, e.g. promotion.halfway")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(errors="backslashreplace")
    if not os.path.isfile(args.export) or not os.path.isdir(args.pools):
        print("usage error: --export must be a file and --pools a folder", file=sys.stderr)
        return 2
    report = Report()
    try:
        DrawCheck(args.draw_id, load_chain(args.export, report), args.pools, report).run()
    except OSError as err:
        report.add("export", f"cannot be read ({clean(err.strerror)})")
    except Exception as err:  # a malformed export must fail, never crash
        report.add("verifier", f"stopped early: {type(err).__name__}: {clean(str(err))}")
    return report.emit()


if __name__ == "__main__":
    sys.exit(main())
