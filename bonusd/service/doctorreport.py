"""What `bonusd doctor` found: one finding per check, its status, and the exit status a
monitoring system reads (0 clean, 1 warnings, 2 problems)."""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass


class CheckStatus(enum.IntEnum):
    """A finding's weight; its value is the exit status it calls for."""

    OK = 0
    WARN = 1  # works today; will hurt (an expiry near, monitoring blind, a limit near)
    FAIL = 2  # breaks a promise now (an event or an audit record can be lost, refused)


@dataclass(frozen=True)
class Finding:
    """One check's result: `what` it found and, unless OK, `fix`: how to put it right.
    Neither ever holds a secret or a person's data (token ids and roles, not names)."""

    check: str
    status: CheckStatus
    what: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.status.name} {self.check}: {self.what}"
        return f"{text} — fix: {self.fix}" if self.fix and self.status else text

    def as_dict(self) -> dict[str, str]:
        return {
            "check": self.check,
            "status": self.status.name,
            "what": self.what,
            "fix": self.fix if self.status else "",
        }


def exit_status(findings: Sequence[Finding]) -> int:
    """0 when every finding is OK, 1 when the worst is a WARN, 2 when any is a FAIL."""
    return int(max((f.status for f in findings), default=CheckStatus.OK))


def as_text(findings: Sequence[Finding]) -> str:
    counts = {s: sum(f.status is s for f in findings) for s in CheckStatus}
    summary = ", ".join(f"{counts[s]} {s.name}" for s in CheckStatus)
    return "\n".join([*(f.line() for f in findings), f"doctor: {summary}"])


def as_json(findings: Sequence[Finding], *, site: str) -> str:
    status = exit_status(findings)
    return json.dumps(
        {
            "site": site,
            "status": CheckStatus(status).name,
            "exit": status,
            "checks": [f.as_dict() for f in findings],
        },
        indent=2,
    )
