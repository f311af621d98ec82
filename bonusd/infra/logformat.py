"""The daemon's log lines: plain text (the default) or one JSON object a line
(`BONUSD_LOG_FORMAT=json`) for a log shipper (journald → Loki, Elasticsearch, ...).

A JSON line holds exactly what a text line holds — the time, the level, the logger, the
message with its arguments filled in, and an exception's traceback when there is one —
and nothing else: no `extra=` fields, no raw arguments. So the rule that no member's
name, full card number or mobile number is ever logged (tests/project/test_no_pii_in_logs.py)
holds for both formats by construction, not by a second review.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import Literal

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonLogFormatter(logging.Formatter):
    """`{"time": "2026-10-03T18:55:00.123Z", "level": "INFO", "logger": "bonusd...",
    "message": "...", "exception": "Traceback ..."}`, ASCII only, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        at = dt.datetime.fromtimestamp(record.created, dt.UTC)
        entry = {
            "time": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:  # cached, as logging.Formatter does
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        # ensure_ascii: a line separator or a control character in a message can never
        # split or corrupt the line a shipper reads
        return json.dumps(entry, ensure_ascii=True, separators=(",", ":"))


def configure_logging(level: str, log_format: Literal["text", "json"]) -> None:
    """The root logger's one handler on stderr, in `log_format`, at `level` (as
    `logging.basicConfig`: nothing happens if the root logger has handlers already)."""
    root = logging.getLogger()
    for bare in [h for h in root.handlers if _from_bare_basic_config(h)]:
        # a library's own `logging.basicConfig()` at import (python-escpos does it) would
        # otherwise keep the daemon at WARNING in logging's default format
        root.removeHandler(bare)
    handler = logging.StreamHandler()
    formatter = JsonLogFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    handler.setFormatter(formatter)
    logging.basicConfig(level=level, handlers=[handler])


def _from_bare_basic_config(handler: logging.Handler) -> bool:
    """A handler as `logging.basicConfig()` without arguments makes it (not a test
    runner's capture, not one configured on purpose)."""
    formatter = handler.formatter
    return (
        type(handler) is logging.StreamHandler
        and formatter is not None
        and formatter._fmt == logging.BASIC_FORMAT  # the format string has no accessor
    )
