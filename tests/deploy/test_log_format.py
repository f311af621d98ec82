"""BONUSD_LOG_FORMAT=json: one JSON object a line holding exactly what a text line holds
(time, level, logger, message, traceback), whatever a message contains; and the
daemon's format survives a library that configures logging itself at import. The
no-personal-data rule for JSON lines: tests/project/test_no_pii_in_logs.py."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

from bonusd.infra.logformat import JsonLogFormatter


def _record(message: str, *args: object, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise ValueError("the cause")
        except ValueError:
            info = sys.exc_info()
    return logging.LogRecord("bonusd.test", logging.ERROR, __file__, 1, message, args, info)


def test_a_json_line_holds_what_a_text_line_holds() -> None:
    line = JsonLogFormatter().format(_record("applied %d event(s) on %s", 3, "EGM-1", exc=True))
    entry = json.loads(line)
    assert set(entry) == {"time", "level", "logger", "message", "exception"}
    assert entry["message"] == "applied 3 event(s) on EGM-1"
    assert (entry["level"], entry["logger"]) == ("ERROR", "bonusd.test")
    assert entry["time"].endswith("Z") and len(entry["time"]) == len("2026-10-03T18:55:00.123Z")
    assert "ValueError: the cause" in entry["exception"]


def test_any_message_stays_on_one_ascii_line() -> None:
    hostile = "a\nb\r\u2028c\u0085d\x1b[31m\u00e9\ud83c"
    line = JsonLogFormatter().format(_record("%s", hostile))
    assert line.isascii() and len(line.splitlines()) == 1
    assert json.loads(line)["message"] == hostile


def test_a_library_calling_basic_config_at_import_does_not_win() -> None:
    """python-escpos calls logging.basicConfig() when imported: the daemon's INFO lines in
    its own format still come out."""
    probe = (
        "import logging; logging.basicConfig()\n"
        "from bonusd.infra.logformat import configure_logging\n"
        "configure_logging('INFO', 'json')\n"
        "logging.getLogger('bonusd.x').info('hello %s', 'there')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=30
    )
    (line,) = done.stderr.splitlines()
    assert json.loads(line)["message"] == "hello there"
