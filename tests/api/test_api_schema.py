"""schemathesis against the daemon's own OpenAPI schema, with a valid token of every role
(and none): no answer is a 5xx, every error is a 4xx whose JSON body has a `detail`
saying what is wrong, and every body conforms to the schema the route documents.

One daemon runs for the module, in a thread of its own (schemathesis calls it over real
HTTP), with both seed promotions (Festa Fortuna moved to its site, for its RAPS sessions),
on a manual clock on Golden Horse's launch day.
Cases come from the schema, valid (positive) and schema-breaking (negative); half of them
use the ids that exist (promotion, draw, card, ...) so the handlers behind the 404s run
too. The default suite runs a few cases per operation and role; `make test-slow` runs the
`_deep` twin with many more (docs/robustness.md).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
)
from schemathesis.core.result import Ok

from bonusd.access.auth import Role
from bonusd.clocks.clock import ManualClock
from bonusd.service.root import Service
from bonusd.settings import Settings
from simulators.local.services import LocalMosquitto, free_port
from tests.daemon_helpers import PROJECT, SAST, running

SITE = "golden-horse"
SEEDS = ("golden-horse-mega-points-chase.toml", "montecasino-festa-fortuna.toml")
LAUNCH_EVENING = dt.datetime(2026, 10, 3, 20, 0, tzinfo=SAST)
MEMBERS = """card,name,tier,app_user,date_of_birth,sms_opt_in,excluded,exclusion_reason,last_visit,mobile
7001,Thandi Mokoena,Q,true,1980-02-01,true,false,,2026-09-01,+27821234567
7002,Johan Botha,J,false,1975-06-30,false,false,,,
"""
DEVICES = "device,kind,area,bank,position\nEGM-1,egm,main,B1,1\nT1,table,main,Pit 1,R1\n"
ROLES: tuple[Role | None, ...] = (Role.ADMIN, Role.DESK, Role.CREW, Role.KIOSK, Role.SIGNAGE, None)


def _schema_settings(redis_url: str, mqtt_url: str, promotions: Path) -> Settings:
    tag = f"sch{uuid.uuid4().hex[:8]}"  # per-run key and topic prefixes
    return Settings(
        site=SITE,
        redis_url=redis_url,
        mqtt_url=mqtt_url,
        mqtt_client_id=f"bonusd-{tag}",
        key_prefix=tag,
        topic_prefix=tag,
        http_port=free_port(),
        promotions=promotions,
        # the no-token cases send hundreds of made-up tokens from one address on purpose;
        # past the default limit every later case would get 429 (docs/security.md)
        limit_auth_failures_per_client=1_000_000,
    )


def _both_seeds(folder: Path) -> Path:
    """Both seed promotions, for one site."""
    for seed in SEEDS:
        text = (PROJECT / "promotions" / seed).read_text(encoding="utf-8")
        text = text.replace('site = "montecasino"', f'site = "{SITE}"', 1)
        (folder / seed).write_text(text, encoding="utf-8")
    return folder


# The operations, from the application itself (nothing is connected to build it).
SCHEMA = schemathesis.openapi.from_dict(
    Service(
        _schema_settings("redis://127.0.0.1:1/0", "mqtt://127.0.0.1:1", PROJECT / "promotions")
    ).app.openapi()
)
OPERATIONS = {r.ok().label: r.ok() for r in SCHEMA.get_all_operations() if isinstance(r, Ok)}


@dataclass
class ThreadedDaemon:
    """A daemon on its own event loop in a thread, with one token per role."""

    settings: Settings
    base_url: str = ""
    tokens: dict[Role, str] = field(default_factory=dict)
    known: dict[str, Any] = field(default_factory=dict)
    _ready: threading.Event = field(default_factory=threading.Event)
    _loop: asyncio.AbstractEventLoop | None = None
    _stop: asyncio.Event | None = None
    _error: BaseException | None = None

    def __enter__(self) -> ThreadedDaemon:
        self._thread = threading.Thread(target=self._run, name="schema-daemon", daemon=True)
        self._thread.start()
        if not self._ready.wait(30) or self._error is not None:
            raise RuntimeError(f"the daemon did not start: {self._error!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported by __enter__ or the tests
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with running(self.settings, ManualClock(LAUNCH_EVENING)) as d:
            svc = d.service
            for role in Role:
                issued = await svc.tokens.issue(
                    role=role,
                    name=f"schemathesis {role}",
                    area="main" if role is Role.SIGNAGE else "",
                    now=svc.clock.now(),
                    valid_for=dt.timedelta(days=30),
                )
                self.tokens[role] = issued.token
            for path, body in (("/members/import", MEMBERS), ("/devices/import", DEVICES)):
                r = await d.http.post(path, content=body, headers={"content-type": "text/csv"})
                r.raise_for_status()
            self.base_url = str(d.http.base_url).rstrip("/")
            self.known = _known_ids(svc)
            self._ready.set()
            await self._stop.wait()


def _known_ids(svc: Service) -> dict[str, Any]:
    """Path parameter values that exist on this daemon: `places` holds a promotion with
    one of its draws and one of its RAPS sessions (ids that belong together)."""
    places: list[dict[str, str]] = []
    for p in svc.promotions:
        draws = [d.id for d in p.draw_list] or ["none"]
        sessions = [s.id for s in p.jackpot_sessions] or ["none"]
        for n in range(max(len(draws), len(sessions))):
            draw, session = draws[n % len(draws)], sessions[n % len(sessions)]
            places.append({"promotion": p.id, "draw": draw, "session": session})
    return {
        "places": places,
        "card": ["7001", "7002", "9999"],
        "day": ["2026-10-03"],
        "tombola": ["pooled", "slots", "tables"],
        "round_no": [1, 2],
        "number": [1, 2],
        "claim": [1, 2],
        "entry": ["1"],
        "side": ["slots", "tables"],
        "device": ["EGM-1", "EGM-404"],
        "credential": ["0123456789ab", "nope"],
        "screen": ["0123456789ab", "nope"],
        "staff": ["1001", "9999"],
    }


@pytest.fixture(scope="module")
def api(
    redis_url: str, broker: LocalMosquitto, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ThreadedDaemon]:
    folder = _both_seeds(tmp_path_factory.mktemp("promotions"))
    settings = _schema_settings(redis_url, broker.url, folder)
    with ThreadedDaemon(settings) as daemon:
        yield daemon
    r = redis.Redis.from_url(redis_url)
    keys = list(r.scan_iter(match=f"{settings.key_prefix}:*", count=50_000))
    if keys:
        r.delete(*keys)


_STRATEGIES: dict[tuple[str, GenerationMode, tuple[tuple[str, Any], ...]], Any] = {}


@st.composite
def cases(draw: st.DrawFn, op: Any, known: dict[str, Any]) -> Any:
    """A case for `op`, valid or schema-breaking; half the time with existing ids."""
    mode = draw(st.sampled_from([GenerationMode.POSITIVE, GenerationMode.NEGATIVE]))
    names = [p.name for p in op.path_parameters] if op.path_parameters else []
    fixed: dict[str, Any] = {}
    existing: bool = draw(st.booleans())
    if names and existing:
        place = draw(st.sampled_from(known["places"]))
        fixed = {n: place[n] if n in place else draw(st.sampled_from(known[n])) for n in names}
    key = (op.label, mode, tuple(sorted(fixed.items())))
    if key not in _STRATEGIES:  # building a strategy costs more than drawing from it
        _STRATEGIES[key] = op.as_strategy(generation_mode=mode, path_parameters=fixed or None)
    return draw(_STRATEGIES[key])


def _clear_errors(case: Any, response: Any) -> None:
    """No 5xx; every refusal a 4xx with a JSON `detail`; every body, success or refusal, of
    the media type and in the form `/openapi.json` documents for its status."""
    checks = [not_a_server_error, content_type_conformance, response_schema_conformance]
    case.validate_response(response, checks=checks)
    assert response.status_code < 500, response.text[:500]
    if response.status_code >= 400:
        content_type = (response.headers.get("content-type") or [""])[0]
        assert content_type.startswith("application/json"), (
            response.status_code,
            response.text[:300],
        )
        detail = response.json().get("detail")
        assert detail, response.text[:300]
        if isinstance(detail, list):  # request validation: each problem with its message
            assert all(isinstance(d, dict) and d.get("msg") for d in detail), detail


def _run(api: ThreadedDaemon, label: str, role: Role | None, examples: int) -> None:
    op = OPERATIONS[label]
    session = requests.Session()

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # report the first failure, unshrunk
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases(op, api.known))
    def check(case: Any) -> None:
        if role is not None:  # the role's token, whatever header the case was given
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {api.tokens[role]}"}
        response = case.call(base_url=api.base_url, session=session, timeout=30)
        _clear_errors(case, response)

    check()


# admin passes every guard, so its cases reach every handler; the other roles mostly
# prove the guard answers 403 cleanly, whatever else the request holds
FEW = {Role.ADMIN: 12, None: 2}


@pytest.mark.parametrize("role", ROLES, ids=[str(r or "no-token") for r in ROLES])
@pytest.mark.parametrize("label", sorted(OPERATIONS))
def test_no_server_errors_and_clear_refusals(
    api: ThreadedDaemon, label: str, role: Role | None
) -> None:
    _run(api, label, role, FEW.get(role, 3))


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("role", ROLES, ids=[str(r or "no-token") for r in ROLES])
@pytest.mark.parametrize("label", sorted(OPERATIONS))
def test_no_server_errors_and_clear_refusals_deep(
    api: ThreadedDaemon, label: str, role: Role | None
) -> None:
    _run(api, label, role, 200 if role is Role.ADMIN else 40)


def test_every_operation_is_covered() -> None:
    """A new route joins the run by itself (the schema is read from the application)."""
    assert len(OPERATIONS) >= 50
    assert {"GET /health", "POST /members/import", "GET /deadletters"} <= set(OPERATIONS)


# -- bugs schemathesis found, kept as plain tests ---------------------------------------


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_a_note_with_a_unicode_line_separator_is_refused_and_the_trail_stays_readable(
    api: ThreadedDaemon, separator: str
) -> None:
    """An exclusion note (or a proxy's name) holding U+2028, U+2029 or U+0085 was written
    to the audit trail unescaped, and reading the trail back split the record there: every
    later draw action of the site answered 500 and `bonusd audit verify` failed. The trail
    escapes them now (tests/audit), and the API refuses them in free text (422 naming the
    field, bonusd/api/fields.py): nothing is written, the trail verifies."""
    desk = {"Authorization": f"Bearer {api.tokens[Role.DESK]}"}
    base = f"{api.base_url}/promotions/golden-horse-mega-points-chase/draws/final"
    mark = f"{ord(separator):x}"
    for card in (f"{mark}-1", f"{mark}-2"):
        note = f"refused entry{separator}see the register ({card})"
        r = requests.post(
            f"{base}/exclusions", json={"card": card, "note": note}, headers=desk, timeout=30
        )
        assert r.status_code == 422, r.text
        assert [e["loc"][-1] for e in r.json()["detail"]] == ["note"]
    r = requests.get(f"{api.base_url}/audit?q=see the register ({mark}-", headers=desk, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["ok"], r.json()["chain"]
    assert r.json()["records"] == []


@pytest.mark.parametrize(
    "body",
    ["dev\rice,kind,area\n", "device,kind,area\rEGM-1,egm,Main\r", "©\U000f448a\u00cc\r\u00db"],
)
def test_an_import_with_carriage_returns_is_refused_with_its_row(
    api: ThreadedDaemon, body: str
) -> None:
    """A lone carriage return in an import made the csv module raise: a 500 (and a
    traceback from `bonusd devices import`) instead of the row and field."""
    admin = {"Authorization": f"Bearer {api.tokens[Role.ADMIN]}", "content-type": "text/csv"}
    r = requests.post(
        f"{api.base_url}/devices/import", data=body.encode(), headers=admin, timeout=30
    )
    assert r.status_code == 422, r.text
    assert r.json()["errors"], r.json()
    assert r.json()["detail"].startswith("request body: ")
