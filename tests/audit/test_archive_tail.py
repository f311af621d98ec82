"""The audit archive's last record, read from the end of its newest file: the same line
the whole file read and split gives, whatever the block size and however the file ends."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bonusd.audit.archive import AuditArchive, last_line
from bonusd.audit.chain import AuditLog, Kind
from bonusd.errors import AuditFormatError


def whole_file_answer(data: bytes) -> str:
    """What the archive answered before: the whole file read, its last non-blank line."""
    lines = [ln for ln in data.decode("utf-8").split("\n") if ln.strip()]
    return lines[-1] if lines else ""


LINE = st.one_of(
    st.text(alphabet='ab{}:,"é€ \t\r', max_size=12),  # multi-byte characters, blanks
    st.sampled_from(["", " ", "\t", "\r", "\u00a0"]),
)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(LINE, max_size=12), end=st.sampled_from(["", "\n", "\n\n", " \n"]),
       block=st.sampled_from([1, 2, 3, 7, 64]))  # fmt: skip
def test_the_last_line_is_the_one_the_whole_file_gives(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], end: str, block: int
) -> None:
    path = tmp_path_factory.mktemp("tail") / "audit-2026-10.jsonl"
    data = ("\n".join(lines) + end).encode()
    path.write_bytes(data)
    assert last_line(path, block) == whole_file_answer(data)


def test_a_long_file_is_not_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "audit-2026-10.jsonl"
    path.write_bytes(b"x" * 100 + b"\n" + b"y" * 5_000_000 + b"\n" + b"the last line\n\n")
    read: list[int] = []
    real_open = Path.open

    def counting_open(self: Path, *args: object, **kwargs: object) -> object:
        fh = real_open(self, *args, **kwargs)  # type: ignore[call-overload]
        real_read = fh.read
        fh.read = lambda n=-1: read.append(n) or real_read(n)  # type: ignore[func-returns-value]
        return fh

    monkeypatch.setattr(Path, "open", counting_open)
    assert last_line(path) == "the last line"
    assert read and sum(read) <= 1 << 16 and -1 not in read


def test_the_tail_is_the_last_record_of_the_newest_file(tmp_path: Path) -> None:
    log = AuditLog()
    for day in (1, 2):
        at = dt.datetime(2026, 9 + day, 3, tzinfo=dt.UTC)  # October, then November
        log.append(at=at, actor="desk", kind=Kind.RULE_CHANGE, payload={"n": "é" * 70_000})
    archive = AuditArchive(tmp_path)
    assert archive.tail() is None
    archive.append(log.records)
    tail = archive.tail()
    assert tail is not None and tail.seq == 2 and tail.hash == log.records[-1].hash
    newest = archive.segments()[-1]
    newest.write_text("\n \n")  # a newest file with blank lines only: the one before answers
    tail = archive.tail()
    assert tail is not None and tail.seq == 1


def test_a_torn_last_line_is_refused_as_before(tmp_path: Path) -> None:
    log = AuditLog()
    log.append(
        at=dt.datetime(2026, 10, 3, tzinfo=dt.UTC), actor="d", kind=Kind.RULE_CHANGE, payload={}
    )
    archive = AuditArchive(tmp_path)
    archive.append(log.records)
    with archive.segments()[0].open("a") as fh:
        fh.write('{"seq": 2, "ki')  # a write cut short
    with pytest.raises(AuditFormatError):
        archive.tail()
