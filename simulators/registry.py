"""Writers of the floor registry the daemon imports: `devices.csv` and `members.csv`.

Booleans are written `true`/`false`, dates ISO `YYYY-MM-DD`; an unknown last visit or
mobile number is an empty cell. Staff and excluded members are rows like any other, with
`excluded = true` and the reason (`staff`, `staff_family`, `self_exclusion`,
`refusal_of_entry`), which is how bonusd's import marks who never takes part.
Rows come out in floor order, so the files are byte-identical for one seed.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Final, TextIO

from simulators.floor import Floor

DEVICE_COLUMNS: Final = ("device", "kind", "area", "bank", "position")
MEMBER_COLUMNS: Final = (
    "card",
    "name",
    "tier",
    "app_user",
    "date_of_birth",
    "sms_opt_in",
    "excluded",
    "exclusion_reason",
    "last_visit",
    "mobile",
    "pin_hash",
)


def _flag(value: bool) -> str:
    return "true" if value else "false"


def write_devices_csv(floor: Floor, out: TextIO) -> int:
    """Write `devices.csv` to an open text stream; return the number of rows."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(DEVICE_COLUMNS)
    for d in floor.devices:
        writer.writerow((d.device, d.kind, d.area, d.bank, d.position))
    return len(floor.devices)


def write_members_csv(floor: Floor, out: TextIO, pins: Mapping[str, str] | None = None) -> int:
    """Write `members.csv` to an open text stream; return the number of rows. `pins`: card
    -> PIN hash, for the members given a kiosk PIN."""
    pins = pins or {}
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(MEMBER_COLUMNS)
    for m in floor.members:
        writer.writerow(
            (
                m.card,
                m.name,
                m.tier,
                _flag(m.app_user),
                m.date_of_birth.isoformat(),
                _flag(m.sms_opt_in),
                _flag(m.excluded),
                m.exclusion_reason,
                m.last_visit.isoformat() if m.last_visit else "",
                m.mobile or "",
                pins.get(m.card, ""),
            )
        )
    return len(floor.members)


def export_registry(floor: Floor, directory: Path) -> tuple[Path, Path]:
    """Write `devices.csv` and `members.csv` into `directory` (created if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    devices, members = directory / "devices.csv", directory / "members.csv"
    with devices.open("w", encoding="utf-8", newline="") as fh:
        write_devices_csv(floor, fh)
    with members.open("w", encoding="utf-8", newline="") as fh:
        write_members_csv(floor, fh)
    return devices, members
