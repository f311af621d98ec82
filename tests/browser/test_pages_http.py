"""The pages as HTTP: served by the daemon at /signage, /crew and /desk with their static
files, secure headers (a Content-Security-Policy of this origin only, no framing, nosniff,
no referrer), the daemon's site, time zone and clock rate written in; nothing fetched from
another host, no inline script or style; the display folder found in a checkout and in a
wheel install's data folder. Fast: no browser."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from fastapi.routing import APIRoute

from bonusd.access.auth import Role
from bonusd.api.app import api_routes
from bonusd.api.displayfiles import PAGES, displays_candidates, find_displays
from bonusd.api.pages import CSP, SECURE_HEADERS, clock_rate, page_html
from bonusd.clocks.clock import ManualClock, SimulatedClock, WallClock
from bonusd.settings import Settings
from tests.browser.helpers import FESTA, GH, png, promotions_folder
from tests.daemon_helpers import PROJECT, SAST, Daemon, running

DISPLAYS = PROJECT / "displays"


def _anonymous(daemon: Daemon) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=str(daemon.http.base_url), timeout=10)


def _assert_secure(r: httpx.Response) -> None:
    csp = r.headers["content-security-policy"]
    assert csp == CSP
    for directive in (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "object-src 'none'",
    ):
        assert directive in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp and "*" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert r.headers["x-frame-options"] == "DENY"


async def test_pages_are_served_with_secure_headers_and_the_daemon_facts(daemon: Daemon) -> None:
    async with _anonymous(daemon) as http:
        for path in PAGES:
            r = await http.get(f"{path}?site={daemon.service.settings.site}&area=main")
            assert r.status_code == 200, (path, r.text)
            assert r.headers["content-type"].startswith("text/html")
            _assert_secure(r)
            assert f'<meta name="bonusd-site" content="{daemon.service.settings.site}">' in r.text
            assert '<meta name="bonusd-timezone" content="Africa/Johannesburg">' in r.text
            assert '<meta name="bonusd-clock-rate" content="0">' in r.text  # the test clock
            assert '<link rel="icon" href="/displays/favicon.svg"' in r.text  # no 404 per load
            # every file the page names is served, with the same headers
            for ref in re.findall(r'(?:src|href)="(/displays/[^"]+)"', r.text):
                asset = await http.get(ref)
                assert asset.status_code == 200, ref
                _assert_secure(asset)
        bad = await http.get("/signage?area=../../etc")
        assert bad.status_code == 400
        assert "area" in bad.text
        for name in ("nothing.js", "README.md", "signage.html", "..%2Fpyproject.toml"):
            r = await http.get(f"/displays/{name}")
            assert r.status_code == 404, name
        js = await http.get("/displays/stream.js")
        assert js.headers["content-type"].startswith("text/javascript")
        icon = await http.get("/displays/favicon.svg")
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"


async def test_the_page_routes_hold_no_data_and_are_outside_the_api(daemon: Daemon) -> None:
    """Public on purpose: the pages are files; every datum needs a token (test_roles.py
    checks the API's route table, where these routes are not)."""
    api_paths = {r.path for r in api_routes(daemon.service.app) if isinstance(r, APIRoute)}
    assert not api_paths & {*PAGES, "/displays/{name}"}
    assert {"/audit", "/promotions/{promotion}/jackpots"} <= api_paths
    async with _anonymous(daemon) as http:
        assert (await http.get("/audit")).status_code == 401
    crew = await daemon.client(Role.CREW)
    try:
        assert (await crew.get("/audit")).status_code == 403
    finally:
        await crew.aclose()
    audit = await daemon.get("/audit?count=5")
    assert audit["ok"] is True and audit["chain"].startswith("chain intact")


def test_displays_are_self_contained() -> None:
    """No CDN, no other host, no inline script or style (the CSP would refuse them), and
    each module says what it owns in its header comment, under ~400 lines."""
    files = sorted(p for p in DISPLAYS.iterdir() if p.suffix in {".html", ".css", ".js"})
    assert {p.name for p in files} >= set(PAGES.values())
    for path in files:
        text = path.read_text("utf-8")
        assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text), path.name
        assert len(text.splitlines()) <= 400, f"{path.name} is over 400 lines"
        if path.suffix == ".html":
            assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), (
                f"inline script in {path.name}"
            )
            assert "<style" not in text and " style=" not in text, f"inline style in {path.name}"
            assert not re.search(r"\son[a-z]+=", text), f"inline handler in {path.name}"
            assert text.lstrip().startswith("<!doctype html>\n<!--"), f"{path.name} header comment"
        elif path.suffix == ".js":
            assert text.startswith(f"// {path.name} — "), f"{path.name} header comment"
            assert ".innerHTML" not in text and "eval(" not in text, path.name
        else:
            assert text.startswith(f"/* {path.name} — "), f"{path.name} header comment"


def test_displays_are_found_in_a_checkout_or_a_wheel_install(tmp_path: Path) -> None:
    assert find_displays() == DISPLAYS
    assert displays_candidates()[0] == DISPLAYS
    empty, installed = tmp_path / "nothing", tmp_path / "share" / "bonusd" / "displays"
    installed.mkdir(parents=True)
    for page in PAGES.values():
        (installed / page).write_text("<!doctype html>")
    assert find_displays([empty, installed]) == installed
    with pytest.raises(FileNotFoundError, match=r"signage\.html"):
        find_displays([empty])


def test_page_facts_are_escaped() -> None:
    page = '<meta name="bonusd-site" content=""><meta name="bonusd-timezone" content="">'
    out = page_html(page, site='a"b', timezone="Africa/Johannesburg", rate=60.0)
    assert 'content="a&quot;b"' in out and 'content="Africa/Johannesburg"' in out
    assert set(SECURE_HEADERS) >= {"Content-Security-Policy", "X-Content-Type-Options"}


def test_every_screenshot_is_listed_and_light() -> None:
    """docs/screens/README.md lists exactly the screenshots the browser tests write."""
    screens = PROJECT / "docs" / "screens"
    listed = set(re.findall(r"\[([a-z0-9-]+\.png)\]", (screens / "README.md").read_text("utf-8")))
    written = {p.name for p in screens.glob("*.png")}
    assert written <= listed, f"not in docs/screens/README.md: {sorted(written - listed)}"
    names = set()
    for test in (PROJECT / "tests" / "browser").glob("test_*.py"):
        names |= {
            f"{n}.png" for n in re.findall(r'shot\([a-z]+, "([a-z0-9-]+)"\)', test.read_text())
        }
    assert listed == names, (sorted(listed - names), sorted(names - listed))
    for path in screens.glob("*.png"):
        assert path.stat().st_size < 300 * 1024, path.name


def test_the_pages_count_down_at_the_daemons_pace() -> None:
    start = dt.datetime(2026, 11, 7, 19, 0, tzinfo=SAST)
    assert clock_rate(WallClock()) == 1.0
    assert clock_rate(SimulatedClock(start, 60)) == 60.0
    assert clock_rate(ManualClock(start)) == 0.0
    shared = SimpleNamespace(state=SimpleNamespace(speed=600.0, paused=False), now=None)
    assert clock_rate(shared) == 600.0  # type: ignore[arg-type]
    shared.state.paused = True
    assert clock_rate(shared) == 0.0  # type: ignore[arg-type]


async def test_a_promotions_logo_is_served_within_bounds(
    settings: Settings, clock: ManualClock, tmp_path: Path
) -> None:
    """`/signage/logo/{promotion}` serves the file a running promotion names, as the image
    it is, with the pages' headers; nothing else (another promotion's, a file replaced by
    something that is not its image, a path) is served."""
    folder = promotions_folder(tmp_path, settings.site, GH, FESTA)
    logo = folder / "gh-logo.png"
    logo.write_bytes(png())
    gh = folder / f"{GH}.toml"
    gh.write_text(gh.read_text() + '\n[signage]\nlogo = "gh-logo.png"\n', encoding="utf-8")
    updated = settings.model_copy(update={"promotions": folder})
    async with running(updated, clock) as d, _anonymous(d) as http:
        r = await http.get(f"/signage/logo/{GH}")
        assert r.status_code == 200 and r.content == logo.read_bytes()
        assert r.headers["content-type"] == "image/png"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["cache-control"] == "no-cache"
        assert r.headers["content-security-policy"] == CSP
        for path in (f"/signage/logo/{FESTA}", "/signage/logo/nothing", "/signage/logo/..%2Fx"):
            assert (await http.get(path)).status_code == 404, path
        logo.write_bytes(b"<svg onload=alert(1)>")  # replaced since the promotion loaded
        r = await http.get(f"/signage/logo/{GH}")
        assert r.status_code == 404 and b"svg" not in r.content
