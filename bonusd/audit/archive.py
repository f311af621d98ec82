"""The audit archive: the site's hash-chained audit trail copied out of Redis into
append-only JSON Lines files, one per calendar month of the records' time (UTC), kept for
the audit retention period (three years or more) and verifiable on their own.

    {folder}/audit-2026-10.jsonl     records of October 2026, one canonical record a line
    {folder}/audit-2026-11.jsonl     ...

Records are only ever appended, and only when they extend the archive's chain: the first
new record must follow the archive's last one (seq + 1, its hash as `prev_hash`), so the
files hold one unbroken chain. A month's file is deleted only once its last day is older
than the retention period, oldest first, never the newest file; the chain of what is left
is then checked from its first record on (`verify`).
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bonusd.audit.chain import GENESIS, AuditRecord, ChainCheck, ChainWalk, from_jsonl
from bonusd.audit.store import BATCH, BATCH_BYTES
from bonusd.errors import AuditFormatError

SEGMENT_GLOB = "audit-????-??.jsonl"
TAIL_BLOCK = 1 << 16  # bytes read at a time from a file's end for its last line
MAX_LINE_BYTES = 64 << 20  # an archived record's line at most (a late redraw's: a few MB)


@dataclass(frozen=True)
class ArchiveCheck:
    """What `verify` found: the chain check and the seq range the files hold."""

    check: ChainCheck
    first_seq: int  # 0: the archive is empty
    last_seq: int
    files: int

    @property
    def ok(self) -> bool:
        return self.check.ok

    def __str__(self) -> str:
        if not self.check.ok:
            return f"archive broken at seq {self.check.broken_at}: {self.check.reason}"
        if not self.files:
            return "archive empty"
        return f"archive ok: records {self.first_seq}..{self.last_seq} in {self.files} file(s)" + (
            "" if self.first_seq == 1 else " (older months past retention deleted)"
        )


def check_links(records: Iterable[AuditRecord]) -> ChainCheck:
    """Seq numbers, links, hashes and time order of consecutive records. The first record
    is taken as it is (its predecessor may have been deleted past retention), except that
    seq 1 must start from the genesis hash."""
    walk = ChainWalk(anywhere=True)
    walk.add(records)
    return walk.check


def jsonl_batches(
    paths: Iterable[Path], size: int | None = None, budget: int = BATCH_BYTES
) -> Iterator[list[AuditRecord]]:
    """The records of JSON Lines files (an export, an archive's month files) in order, read
    a line at a time and parsed at most `size` records or about `budget` bytes at a time,
    so a long archive is checked without holding it whole. A line longer than
    `MAX_LINE_BYTES`, or not UTF-8, is refused (`AuditFormatError`, naming the file)."""
    size = size or BATCH
    for path in paths:
        lines: list[str] = []
        held, first = 0, 1
        for line_no, line in _lines(path):
            lines.append(line)
            held += len(line)
            if len(lines) >= size or held >= budget:
                yield from _parsed(path, lines, first)
                lines, held, first = [], 0, line_no + 1
        yield from _parsed(path, lines, first)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """The file's lines with their numbers, each at most `MAX_LINE_BYTES` and UTF-8."""
    with path.open("rb") as fh:
        line_no = 0
        while raw := fh.readline(MAX_LINE_BYTES + 1):
            line_no += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise AuditFormatError(
                    f"{path}: line {line_no} is over {MAX_LINE_BYTES} bytes, not an audit record"
                )
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise AuditFormatError(f"{path}: line {line_no} is not UTF-8") from None
            yield line_no, line


def _parsed(path: Path, lines: list[str], first: int) -> Iterator[list[AuditRecord]]:
    """The records of `lines` (from line `first` of `path`) as one batch; none when they
    are blank."""
    try:
        records = from_jsonl("".join(lines), first_line=first)
    except AuditFormatError as exc:
        raise AuditFormatError(f"{path}: {exc}") from None
    if records:
        yield records


def site_archive(root: Path, prefix: str, site: str) -> Path:
    """The archive folder of one site under `BONUSD_RETENTION_AUDIT_ARCHIVE` (`root`)."""
    return root / f"{prefix}-{site}"


class AuditArchive:
    """The archive files of one site, in `folder` (created on first append)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def segments(self) -> list[Path]:
        """The month files, oldest first."""
        if not self.folder.is_dir():
            return []
        return sorted(self.folder.glob(SEGMENT_GLOB))

    def tail(self) -> AuditRecord | None:
        """The archive's last record (None: empty), read from the end of the newest file
        that holds one: each append and each sweep asks, and a month's file grows all month."""
        for path in reversed(self.segments()):
            line = last_line(path)
            if line:
                return from_jsonl(line)[0]
        return None

    def append(self, records: Sequence[AuditRecord]) -> int:
        """Append `records`, which must extend the archive's chain (else `AuditFormatError`
        and nothing is written); flushed to disk before returning. How many were written."""
        if not records:
            return 0
        self.folder.mkdir(parents=True, exist_ok=True)
        # one writer at a time (a leader handing over): the tail is read under the lock
        with (self.folder / ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return self._append(records)

    def _append(self, records: Sequence[AuditRecord]) -> int:
        tail = self.tail()
        first = records[0]
        if tail is None:
            if first.seq != 1 or first.prev_hash != GENESIS:
                raise AuditFormatError(
                    f"audit archive {self.folder} is empty but the first record to archive "
                    f"is seq {first.seq}: archive from the start of the trail"
                )
        elif first.seq != tail.seq + 1 or first.prev_hash != tail.hash:
            raise AuditFormatError(
                f"audit record {first.seq} does not extend the archive in {self.folder} "
                f"(its last record is seq {tail.seq}): a different site or trail? "
                "Nothing was archived; check the folder and BONUSD_RETENTION_AUDIT_ARCHIVE"
            )
        check = check_links([tail, *records] if tail else records)
        if not check.ok:
            raise AuditFormatError(f"audit records to archive are broken: {check}")
        by_month: dict[str, list[str]] = {}
        for rec in records:
            by_month.setdefault(rec.time[:7], []).append(rec.to_json() + "\n")
        for month, lines in by_month.items():
            path = self.folder / f"audit-{month}.jsonl"
            with path.open("a", encoding="utf-8") as fh:
                fh.write("".join(lines))
                fh.flush()
                os.fsync(fh.fileno())
        return len(records)

    def batches(self) -> Iterator[list[AuditRecord]]:
        """The archive's records in order, a batch at a time (`jsonl_batches`)."""
        return jsonl_batches(self.segments())

    def verify(self) -> ArchiveCheck:
        """Check the whole archive's chain, a batch at a time; a file that does not parse
        is a broken link."""
        files = self.segments()
        walk, first, last = ChainWalk(anywhere=True), 0, 0
        try:
            for batch in jsonl_batches(files):
                walk.add(batch)
                first, last = first or batch[0].seq, batch[-1].seq
        except AuditFormatError as exc:
            return ArchiveCheck(ChainCheck(0, 0, str(exc)), 0, 0, len(files))
        return ArchiveCheck(walk.check, first, last, len(files))

    def prune(self, today: dt.date, keep_days: int) -> list[Path]:
        """Delete the month files whose last day is more than `keep_days` before `today`,
        oldest first, never the newest file. The files deleted."""
        gone: list[Path] = []
        files = self.segments()
        for path in files[:-1]:
            year, month = int(path.stem[6:10]), int(path.stem[11:13])
            month_end = dt.date(year + month // 12, month % 12 + 1, 1) - dt.timedelta(days=1)
            if (today - month_end).days <= keep_days:
                break
            path.unlink()
            gone.append(path)
        return gone


def last_line(path: Path, block: int = TAIL_BLOCK) -> str:
    """The file's last line that is not blank ("" when it has none), read backwards from
    its end a block at a time (each twice the last), so only that line and what follows
    it are held, however long the file; one over `MAX_LINE_BYTES` is refused."""
    with path.open("rb") as fh:
        start = fh.seek(0, os.SEEK_END)
        held = b""
        while start > 0:
            step = min(start, block)
            start -= step
            fh.seek(start)
            held = fh.read(step) + held
            pieces = held.split(b"\n")
            # the first piece may be cut short unless the file's start was reached
            for piece in reversed(pieces if start == 0 else pieces[1:]):
                try:
                    line = piece.decode("utf-8")
                except UnicodeDecodeError:
                    raise AuditFormatError(f"{path}: its last line is not UTF-8") from None
                if line.strip():
                    return line
            held, block = pieces[0], block * 2  # only blank lines after it: read further back
            if len(held) > MAX_LINE_BYTES:
                raise AuditFormatError(f"{path}: its last line is over {MAX_LINE_BYTES} bytes")
    return ""
