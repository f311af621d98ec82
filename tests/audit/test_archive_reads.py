"""How the audit archive is read without holding it whole: its last record from the end of
its newest file (the same line the whole file read and split gives, whatever the block
size and however the file ends), and its records a batch at a time (the same records
the whole files give, with errors naming the file and its line)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bonusd.audit import archive as archive_module
from bonusd.audit.archive import AuditArchive, jsonl_batches, last_line
from bonusd.audit.chain import AuditLog, Kind, from_jsonl, to_jsonl
from bonusd.errors import AuditFormatError


def whole_file_answer(data: bytes) -> str:
    """What the archive answered before: the whole file read, its last non-blank line (the
    lines here hold no CR, which reading the whole file as text also split on; canonical
    JSON escapes it)."""
    lines = [ln for ln in data.decode("utf-8").split("\n") if ln.strip()]
    return lines[-1] if lines else ""


LINE = st.one_of(
    st.text(alphabet='ab{}:,"é€ \t', max_size=12),  # multi-byte characters, blanks
    st.sampled_from(["", " ", "\t", "\u00a0"]),
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


def _two_files(folder: Path) -> list[Path]:
    log = AuditLog()
    for n in range(11):
        at = dt.datetime(2026, 10, 28, tzinfo=dt.UTC) + dt.timedelta(days=n)
        log.append(at=at, actor="desk", kind=Kind.RULE_CHANGE, payload={"n": "x" * (n * 50)})
    AuditArchive(folder).append(log.records)
    return AuditArchive(folder).segments()


@pytest.mark.parametrize(
    ("size", "budget"), [(1, 10**6), (2, 10**6), (3, 10**6), (7, 10**6), (500, 300)]
)
def test_batches_give_the_records_the_whole_files_give(
    tmp_path: Path, size: int, budget: int
) -> None:
    files = _two_files(tmp_path)
    assert len(files) == 2
    whole = [r for path in files for r in from_jsonl(path.read_text(encoding="utf-8"))]
    batches = list(jsonl_batches(files, size, budget))
    assert [r for batch in batches for r in batch] == whole
    assert all(len(batch) <= size for batch in batches)
    if budget < 10**6:  # a batch ends once it holds the budget
        assert all(len(to_jsonl(batch[:-1])) < budget for batch in batches)


def test_a_bad_line_is_named_by_its_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _two_files(tmp_path)
    lines = files[1].read_text(encoding="utf-8").split("\n")
    lines[5] = '{"seq": 8, "not": "a record"}'
    files[1].write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(AuditFormatError, match=f"{files[1]}: audit export line 6"):
        list(jsonl_batches(files, size=2))
    limit = len(files[0].read_bytes().split(b"\n")[2])  # line 3 fits; line 4 is longer
    monkeypatch.setattr(archive_module, "MAX_LINE_BYTES", limit)  # a line over it: refused
    with pytest.raises(AuditFormatError, match=f"{files[0]}: line 4 is over {limit} bytes"):
        list(jsonl_batches(files))
    check = AuditArchive(tmp_path).verify()
    assert not check.ok and f"line 4 is over {limit} bytes" in str(check)


def test_blank_lines_at_a_batch_boundary_or_alone_are_no_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _two_files(tmp_path)
    with files[0].open("a") as fh:
        fh.write("\n \n")  # blank lines after the file's last record
    (tmp_path / "audit-2026-12.jsonl").write_text("\n\n")  # a newest file of blank lines
    monkeypatch.setattr(archive_module, "BATCH", 4)  # the October file's 4 records: one batch
    batches = list(AuditArchive(tmp_path).batches())
    assert all(batches) and sum(map(len, batches)) == 11
    check = AuditArchive(tmp_path).verify()
    assert check.ok and (check.first_seq, check.last_seq, check.files) == (1, 11, 3), str(check)


def test_an_archive_whose_seq_1_does_not_start_from_genesis_says_so(tmp_path: Path) -> None:
    files = _two_files(tmp_path)
    text = files[0].read_text(encoding="utf-8")
    files[0].write_text(text.replace('"prev_hash":"' + "0" * 64, '"prev_hash":"' + "1" * 64, 1))
    check = AuditArchive(tmp_path).verify()
    assert check.check.broken_at == 1
    assert "the first record does not start from the genesis hash" in str(check)


def test_a_last_line_over_the_limit_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit-2026-10.jsonl"
    path.write_bytes(b'{"seq": 1}\n' + b"z" * 10_000)  # a write cut short, without its LF
    monkeypatch.setattr(archive_module, "MAX_LINE_BYTES", 5_000)
    with pytest.raises(AuditFormatError, match="its last line is over 5000 bytes"):
        last_line(path, block=1_024)
    path.write_bytes(b"\xff\xfe\n")
    with pytest.raises(AuditFormatError, match="its last line is not UTF-8"):
        AuditArchive(tmp_path).tail()
