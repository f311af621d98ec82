"""The bonusd exception hierarchy: few classes, each with a message an operator can act on."""

from __future__ import annotations


class BonusdError(Exception):
    """Base of every error bonusd raises on purpose."""


class ConfigError(BonusdError):
    """A setting or a configuration file is wrong; the message names the place and the fix."""


class ImportRowError(BonusdError):
    """One row of an imported file (members, devices) is invalid."""

    def __init__(self, source: str, row: int, field: str, problem: str) -> None:
        self.source = source
        self.row = row
        self.field = field
        self.problem = problem
        super().__init__(f"{source}: row {row}, field {field!r}: {problem}")


class ImportFileError(BonusdError):
    """An import file was refused; `errors` holds every row error found, not only the first."""

    def __init__(self, source: str, errors: list[ImportRowError]) -> None:
        self.source = source
        self.errors = errors
        shown = "\n".join(f"  {e}" for e in errors[:20])
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(
            f"{source}: {len(errors)} invalid row(s), nothing imported:\n{shown}{more}"
        )


class AuditFormatError(BonusdError):
    """An audit export or an archived pool file cannot be read."""


class NotFoundError(BonusdError):
    """A member, device or record that was asked for does not exist."""


class ConflictError(BonusdError):
    """Other writers kept changing the same record while a step was being decided (for
    example a draw run from two places at once); nothing was written, try the step again."""


class ServiceUnavailableError(BonusdError):
    """Redis or the MQTT broker cannot be reached right now; the daemon keeps retrying."""


class ClockError(BonusdError):
    """The shared clock refused a change (backwards, a speed out of range) or is unusable."""
