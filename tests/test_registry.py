"""Member and device imports: all rows valid or nothing written, errors name row and field."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from bonusd.errors import ImportFileError
from bonusd.registry import Device, Member, Tier, parse_text

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
