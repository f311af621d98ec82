"""Member and device imports: all rows valid or nothing written, errors name row and field."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest

from bonusd.errors import ImportFileError
from bonusd.registry.files import MAX_PROBLEMS, check_file, parse_text
from bonusd.registry.records import Device, DeviceKind, Member, Tier

HEADER = "card,name,tier,app_user,date_of_birth,sms_opt_in,excluded,exclusion_reason,last_visit"


def test_csv_members_parse_with_defaults_and_booleans() -> None:
    text = f"{HEADER}\n7001,Lerato Dlamini,A,yes,1990-01-31,true,false,,2026-07-15\n7002,Piet Nel,10,,,,,,\n"
    a, b = parse_text(Member, text, source="members.csv")
    assert a.tier is Tier.A
    assert a.app_user is True
    assert a.last_visit == dt.date(2026, 7, 15)
    assert b.tier is Tier.TEN
    assert b.app_user is False
    assert b.date_of_birth is None


def test_json_members_parse() -> None:
    text = json.dumps([{"card": "1", "name": "A B", "tier": "Q", "excluded": True}])
    (m,) = parse_text(Member, text, source="m.json")
    assert m.excluded is True


def test_every_bad_row_is_reported_with_row_and_field() -> None:
    text = (
        f"{HEADER}\n"
        "7001,Ok Person,Q,true,1990-01-01,true,false,,\n"
        "7002,Bad Tier,Z,true,1990-01-01,true,false,,\n"
        "7003,Bad Date,Q,true,1990-13-01,true,false,,\n"
        "7001,Repeat,Q,true,1990-01-01,true,false,,\n"
        ",No Card,Q,true,1990-01-01,true,false,,\n"
    )
    with pytest.raises(ImportFileError) as info:
        parse_text(Member, text, source="members.csv")
    where = {(e.row, e.field) for e in info.value.errors}
    assert where == {(3, "tier"), (4, "date_of_birth"), (5, "card"), (6, "card")}
    assert "members.csv: row 3, field 'tier'" in str(info.value)


def test_missing_column_is_named() -> None:
    with pytest.raises(ImportFileError, match="missing column"):
        parse_text(Member, "card,name\n1,A\n", source="m.csv")


def test_bad_json_is_reported() -> None:
    with pytest.raises(ImportFileError, match="JSON must be an array"):
        parse_text(Member, '{"card": 1}', source="m.json")


def test_member_age_on_a_day() -> None:
    m = Member(card="1", name="X", tier=Tier.J, date_of_birth=dt.date(2008, 10, 4))
    assert m.age_on(dt.date(2026, 10, 3)) == 17
    assert m.age_on(dt.date(2026, 10, 4)) == 18


def test_devices_parse_and_refuse_topic_characters() -> None:
    ok = parse_text(Device, "device,kind,area,bank,position\nEGM-1,egm,main,B1,3\n", source="d")
    assert ok[0].area == "main"
    with pytest.raises(ImportFileError) as info:
        parse_text(Device, "device,kind,area\nEGM/1,egm,main\nT1,wheel,main\n", source="d.csv")
    assert {(e.row, e.field) for e in info.value.errors} == {(2, "device"), (3, "kind")}


def test_member_index_round_trip_equals_the_validated_member() -> None:
    m = Member(
        card="7",
        name="Naledi Sithole",
        tier=Tier.K,
        app_user=True,
        date_of_birth=dt.date(1990, 5, 6),
        sms_opt_in=True,
        excluded=True,
        exclusion_reason="staff",
        last_visit=dt.date(2026, 7, 1),
    )
    rules_view = m.model_copy(update={"name": "", "sms_opt_in": False, "exclusion_reason": ""})
    assert Member.from_index("7", m.to_index()) == rules_view
    bare = Member(card="8", name="X", tier=Tier.TEN)
    assert Member.from_index("8", bare.to_index()) == bare.model_copy(update={"name": ""})


def test_mobile_is_optional_normalised_and_checked() -> None:
    text = (
        f"{HEADER},mobile\n"
        "7001,A B,Q,,,true,,,,+27 82 123-4567\n"
        "7002,C D,Q,,,false,,,,\n"
        "7003,E F,Q,,,true,,,,0821234567\n"
        "7004,G H,Q,,,true,,,,+27 82 12\n"
    )
    with pytest.raises(ImportFileError) as info:
        parse_text(Member, text, source="members.csv")
    assert {(e.row, e.field) for e in info.value.errors} == {(4, "mobile"), (5, "mobile")}
    assert "international format" in str(info.value)
    assert "+27821234567" in str(info.value)  # the message shows the form to use
    good = "\n".join(text.splitlines()[:3]) + "\n"
    a, b = parse_text(Member, good, source="members.csv")
    assert a.mobile == "+27821234567"
    assert b.mobile is None
    assert Member.from_redis(a.to_redis()) == a
    assert Member.from_redis(b.to_redis()) == b
    # files without the column still import, as before the column existed
    (old,) = parse_text(Member, f"{HEADER}\n7005,I J,Q,,,true,,,\n", source="old.csv")
    assert old.mobile is None


# -- text hygiene: what a screen would show wrongly, or a terminal would obey ------------

HOSTILE = {
    "a right-to-left override": "Anna \u202eSmith",
    "a left-to-right isolate": "Anna \u2066Smith\u2069",
    "a newline": "Anna\nSmith",
    "a terminal escape": "Anna \x1b]0;pwned\x07",
    "a C1 control (CSI)": "Anna \x9b2J",
    "a line separator": "Anna\u2028Smith",
}


@pytest.mark.parametrize("value", HOSTILE.values(), ids=HOSTILE.keys())
def test_member_text_refuses_control_and_direction_characters(value: str) -> None:
    rows = [
        {"card": "7001", "name": value, "tier": "Q"},
        {"card": "7002", "name": "Ok Person", "tier": "Q", "exclusion_reason": value},
    ]
    with pytest.raises(ImportFileError) as info:
        parse_text(Member, json.dumps(rows), source="m.json")
    assert [(e.row, e.field) for e in info.value.errors] == [(1, "name"), (2, "exclusion_reason")]
    assert "U+" in info.value.errors[0].problem and "position" in info.value.errors[0].problem


@pytest.mark.parametrize("value", HOSTILE.values(), ids=HOSTILE.keys())
def test_device_text_refuses_control_and_direction_characters(value: str) -> None:
    rows = [
        {"device": f"EGM-{value}", "kind": "egm", "area": "main"},
        {"device": "EGM-2", "kind": "egm", "area": "main", "bank": value, "position": value},
        {"device": "EGM-3", "kind": "egm", "area": "<script>"},
    ]
    with pytest.raises(ImportFileError) as info:
        parse_text(Device, json.dumps(rows), source="d.json")
    where = {(e.row, e.field) for e in info.value.errors}
    assert where == {(1, "device"), (2, "bank"), (2, "position"), (3, "area")}


def test_ordinary_names_of_every_script_still_import() -> None:
    names = ["Zoë Ndlovu-Smith", "O'Brien, Seán", "محمد علی", "ישראל כהן", "李小龙", "Ana María"]
    rows = [{"card": str(7000 + i), "name": n, "tier": "Q"} for i, n in enumerate(names)]
    members = parse_text(Member, json.dumps(rows, ensure_ascii=False), source="m.json")
    assert [m.name for m in members] == names


@pytest.mark.parametrize("levels", [100, 1_000, 100_000])
def test_nested_json_is_a_row_and_field_error_at_any_depth(levels: int) -> None:
    nested = "[" * levels + "]" * levels
    text = f'[{{"card": "7001", "name": "A", "tier": "Q"}}, {{"card": "7002", "name": {nested}}}]'
    with pytest.raises(ImportFileError) as info:
        parse_text(Member, text, source="m.json")
    (first, *_) = info.value.errors
    assert (first.row, first.field) == (2, "name")
    assert "not a list" in first.problem
    with pytest.raises(ImportFileError) as whole:
        parse_text(Member, nested, source="m.json")
    assert [(e.row, e.field) for e in whole.value.errors] == [(1, "(file)")]


def test_numbers_json_cannot_hold_are_errors_not_crashes() -> None:
    for value in ("1e400", "9" * 5_000, "NaN"):
        with pytest.raises(ImportFileError, match="not valid JSON"):
            parse_text(Member, f'[{{"card": "7001", "name": "A", "tier": {value}}}]', source="m")


def test_checked_rows_come_back_in_batches_as_validated() -> None:
    rows = [
        {
            "card": str(7000 + i),
            "name": f"Member {i}",
            "tier": "QKA"[i % 3],
            "mobile": "+27821234567",
        }
        for i in range(2_500)
    ]
    data = json.dumps(rows).encode()
    checked = check_file(Member, io.BytesIO(data), source="m.json")
    assert len(checked) == 2_500
    batches = list(checked.batches(1_000))
    assert [len(b) for b in batches] == [1_000, 1_000, 500]
    flat = [m for b in batches for m in b]
    assert flat == [Member.model_validate(r) for r in rows]
    csv_file = io.BytesIO(b"device,kind,area,bank,position\nEGM-1,egm,main,B1,3\n")
    devices = check_file(Device, csv_file, source="d.csv")
    assert devices.records() == [
        Device(device="EGM-1", kind=DeviceKind.EGM, area="main", bank="B1", position="3")
    ]


def test_a_file_this_wrong_stops_at_the_problem_limit() -> None:
    text = "card,name,tier\n" + "".join(f"{7000 + i},A,Z\n" for i in range(MAX_PROBLEMS + 500))
    with pytest.raises(ImportFileError) as info:
        parse_text(Member, text, source="m.csv")
    assert len(info.value.errors) == MAX_PROBLEMS + 1
    assert "checking stopped" in info.value.errors[-1].problem


def test_progress_counts_every_row() -> None:
    text = "card,name,tier\n" + "".join(f"{7000 + i},A,Q\n" for i in range(2_345))
    told: list[int] = []
    check_file(Member, io.BytesIO(text.encode()), source="m.csv", progress=told.append)
    assert sum(told) == 2_345
