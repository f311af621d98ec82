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


class SeedKeyError(ConfigError):
    """The site's seed key file (`BONUSD_SEED_KEY_FILE`) is unusable: malformed or readable
    by others; the daemon refuses to start and the message says what to fix."""


class SealError(BonusdError):
    """A value kept as a sealed seed does not open with the site's key: plain hex from
    before seeds were sealed, sealed under another key, moved from another key, or altered."""


class SeedRefused(BonusdError):
    """A committed round's (or RAPS jackpot's) seed is missing from Redis, does not open, or
    is not the committed one: nothing is drawn; `problems` holds (key, what is wrong)."""

    def __init__(self, subject: str, problems: list[tuple[str, str]]) -> None:
        self.subject = subject
        self.problems = problems
        shown = "; ".join(f"{name}: {problem}" for name, problem in problems)
        super().__init__(
            f"{subject}: refused, nothing was drawn: {shown}. A committed seed is never made "
            "again: restore the key's sealed value from a Redis backup (with the same "
            "BONUSD_SEED_KEY_FILE), or void the round with the regulator; an exception "
            "record is in the audit trail"
        )


class ReceiptKeyError(ConfigError):
    """The site's receipt key file (`BONUSD_RECEIPT_KEY_FILE`) is unusable: malformed or
    readable by others; the daemon refuses to start and the message says what to fix."""


class ReceiptCodeError(BonusdError):
    """A presented receipt code (typed short code or scanned QR) is not a receipt code at
    all: too long, control characters, the wrong shape; the message says what is wrong."""


class PrinterError(BonusdError):
    """A receipt printer target is malformed, or the printer could not be reached or
    written to in time; the message names the printer and what a floor attendant can check."""
