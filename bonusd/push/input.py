"""What a websocket client of the live push may send, checked before anything acts on it:
the query string of `/ws/signage` and `/ws/crew` and the JSON text frames (docs/push.md).

Every value is checked for type, length and characters (ASCII only: `[0-9]`, never
Unicode digits such as "²"); a parameter the route does not take, or one given twice, is
refused. A frame is bounded in size and nesting before it is parsed. Whatever does not
pass raises `Refused` (close code 4400, or 4401 for a missing token) with a short reason
that never repeats the client's input. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

MAX_FRAME = 4096  # a client never needs to send more than a token and a resume
MAX_NESTING = 4  # objects and arrays in a frame: the hello holds two
MAX_QUERY = 512  # bytes of query string: a token, an area, a site and a resume fit in 200
SEQ_LIMIT = 2**63  # sequence numbers are counters; beyond 64 bits is not one
TOKEN = re.compile(r"[A-Za-z0-9_-]{1,128}")  # bd_<hex id>_<urlsafe secret>, with room
EPOCH = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a stream's epoch (16 hex digits today)
SEQ = re.compile(r"[0-9]{1,19}")
AREA = re.compile(r"[a-z0-9_-]{1,32}")  # as the device registry's areas
SITE = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")  # as BONUSD_SITE
PARAMS: dict[str, re.Pattern[str]] = {
    "token": TOKEN,
    "epoch": EPOCH,
    "seq": SEQ,
    "area": AREA,
    "site": SITE,
}
SIGNAGE_PARAMS = frozenset(PARAMS)
CREW_PARAMS = frozenset({"site"})
HELLO_KEYS = frozenset({"token", "resume"})


class Refused(Exception):
    """Close the connection with `code` and `reason` (a 4xxx code of docs/push.md)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code, self.reason = code, reason


@dataclass(frozen=True)
class Hello:
    token: str  # "" when the handshake's staff session cookie authenticates
    resume: tuple[str, int] | None


@dataclass(frozen=True)
class Query:
    """The checked query string of one connection."""

    site: str | None = None
    area: str | None = None
    hello: Hello | None = None  # `?token=` (signage only), with `&epoch=&seq=` to resume


def parse_query(raw: bytes, allowed: frozenset[str]) -> Query:
    """The query string `raw` (as received) of a connection to a route taking the
    parameters `allowed`; its length is checked before it is parsed."""
    if len(raw) > MAX_QUERY:
        raise Refused(4400, f"query string too long (at most {MAX_QUERY} bytes)")
    try:  # as Starlette reads it; percent-escapes that are not UTF-8 become U+FFFD
        pairs = parse_qsl(raw.decode("latin-1"), keep_blank_values=True, max_num_fields=8)
    except ValueError:
        raise Refused(4400, "too many query parameters") from None
    values: dict[str, str] = {}
    for name, value in pairs:
        if name not in allowed:
            known = ", ".join(sorted(allowed))
            raise Refused(4400, f"unknown query parameter; this stream takes {known}")
        if name in values:
            raise Refused(4400, f"query parameter {name} given twice")
        if not PARAMS[name].fullmatch(value):
            raise Refused(4400, f"query parameter {name} is not a valid {name}")
        values[name] = value
    epoch, seq = values.get("epoch"), values.get("seq")
    if (epoch is None) != (seq is None):
        raise Refused(4400, "epoch and seq come together, to resume")
    if (epoch is not None) and "token" not in values:
        raise Refused(4400, "epoch and seq resume a ?token= connection")
    hello = None
    if "token" in values:
        resume = (epoch, int(seq)) if epoch is not None and seq is not None else None
        hello = Hello(values["token"], resume)
    return Query(values.get("site"), values.get("area"), hello)


def json_object(message: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object a client's frame (an ASGI receive message) holds, or `Refused`."""
    text = message.get("text")
    if not isinstance(text, str):
        raise Refused(4400, "frames are JSON text, not binary")
    if len(text) > MAX_FRAME:
        raise Refused(4400, f"frame too long (at most {MAX_FRAME} characters)")
    # every level of nesting opens with one of these, so their count bounds the depth
    # before the parser recurses into it
    if text.count("{") + text.count("[") > MAX_NESTING:
        raise Refused(4400, f"a frame nests at most {MAX_NESTING} objects or arrays")
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise Refused(4400, "a frame is not JSON") from None
    if not isinstance(value, dict):
        raise Refused(4400, "a frame is a JSON object")
    return value


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def parse_hello(frame: dict[str, Any], *, signed_in: bool = False) -> Hello:
    """The first frame: `{"token": str, "resume"?: {"epoch": str, "seq": int}}`; the token
    may be left out when the handshake carried a staff session cookie (`signed_in`)."""
    token, resume = frame.get("token"), frame.get("resume")
    if token is None and signed_in:
        token = ""
    elif not isinstance(token, str) or not token:
        raise Refused(4401, 'the first frame is {"token": "bd_..."}')
    if token and not TOKEN.fullmatch(token):
        raise Refused(4400, "a token is up to 128 of the characters A-Z a-z 0-9 _ -")
    if not HELLO_KEYS.issuperset(frame):
        raise Refused(4400, 'the first frame holds only "token" and "resume"')
    if resume is None:
        return Hello(token, None)
    if not isinstance(resume, dict) or set(resume) != {"epoch", "seq"}:
        raise Refused(4400, 'resume is {"epoch": "…", "seq": N}')
    epoch, seq = resume["epoch"], resume["seq"]
    if not isinstance(epoch, str) or not EPOCH.fullmatch(epoch):
        raise Refused(4400, "resume epoch is the epoch of a snapshot")
    if not isinstance(seq, int) or isinstance(seq, bool) or not -SEQ_LIMIT <= seq < SEQ_LIMIT:
        raise Refused(4400, "resume seq is the seq of a message (a 64-bit integer)")
    return Hello(token, (epoch, seq))


def check_ping(frame: dict[str, Any]) -> None:
    """After the first frame a client only ever sends `{"type": "ping"}`."""
    if frame != {"type": "ping"}:
        raise Refused(4400, 'after the first frame a client sends only {"type": "ping"}')
