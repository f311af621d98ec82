"""SMS to winners against a real Redis and a real HTTP "SMS provider" on loopback: only
members who opted in are texted, each once, a restart never resends, a failing gateway is
retried and reported and never holds up a claim; and, through the running daemon, the
outbox, the PA announcements and the printed prize letter over HTTP."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import random
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from bonusd.access.auth import Role
from bonusd.audit.chain import Kind
from bonusd.audit.store import AuditStore
from bonusd.clocks.clock import ManualClock
from bonusd.draws.book import SCHEDULER, actor_text
from bonusd.draws.claims import Actor, ClaimRole
from bonusd.draws.evidence import claim_payload
from bonusd.draws.runner import DrawRunner
from bonusd.floor.store import FloorStore
from bonusd.infra.keys import Keys
from bonusd.infra.metrics import Metrics
from bonusd.notices.notifier import SmsNotifier
from bonusd.notices.outbox import Outbox, OutboxError, Status
from bonusd.notices.smsgateway import SECRET_HEADER
from bonusd.promotions import load_promotion
from bonusd.promotions.kinds import Tombola
from bonusd.promotions.pool import EntryPool
from bonusd.promotions.store import PromotionStore
from bonusd.raps.rules import RapsClaim
from bonusd.registry.records import Member, Tier
from bonusd.settings import Settings
from tests.daemon_helpers import PROJECT, running
from tests.draws.helpers import desk_runner

GH = "golden-horse-mega-points-chase"
FESTA = "montecasino-festa-fortuna"
SECRET = "s3cret-shared-with-the-provider"
CREW = Actor("thandi", ClaimRole.CREW)
CARDS = [f"60010091{n:05d}" for n in range(20)]


def kind_of(card: str) -> str:
    """Member n opted out (its number on file) when n % 7 is 0, opted in without a number
    when it is 5, else opted in with a number. Round 1 of the test draw picks members 4,
    14, 7, 18 and 5: two of each of the first two kinds and one of the last."""
    n = CARDS.index(card)
    return "out" if n % 7 == 0 else "no_number" if n % 7 == 5 else "in"


def member(n: int, card: str) -> Member:
    kind = kind_of(card)
    return Member(
        card=card,
        name=f"Member {n} Dlamini",
        tier=Tier.Q,
        sms_opt_in=kind != "out",
        mobile=None if kind == "no_number" else f"+27821{n:06d}",
    )


class Provider:
    """An SMS provider's webhook on a free loopback port: records every POST, answers
    `status` to the first `fail_first` of them and 200 after, `delay_s` late."""

    def __init__(self, *, fail_first: int = 0, status: int = 503, delay_s: float = 0.0) -> None:
        self.posts: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.fail_first, self.status, self.delay_s = fail_first, status, delay_s
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.posts.append((dict(self.headers), json.loads(body)))
                time.sleep(outer.delay_s)
                code = outer.status if len(outer.posts) <= outer.fail_first else 200
                self.send_response(code)
                self.send_header("Content-Length", "15")
                self.end_headers()
                self.wfile.write(b'{"ok": "maybe"}')

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/sms"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def provider() -> Iterator[Provider]:
    p = Provider()
    yield p
    p.close()


@dataclass
class Env:
    """The Golden Horse halfway draw over 20 members at a test site, clock at 19:00."""

    redis: aioredis.Redis
    keys: Keys
    clock: ManualClock
    desk: DrawRunner
    floor: FloorStore
    promotions: PromotionStore
    outbox: Outbox
    site: str

    def notifier(self, url: str = "", metrics: Metrics | None = None, **more: Any) -> SmsNotifier:
        """A fresh notifier (a restarted daemon's): nothing in memory."""
        settings = Settings(
            site=self.site,
            sms_webhook_url=url,
            sms_webhook_secret=SECRET if url else "",
            sms_timeout_s=5,
            **more,
        )
        return SmsNotifier(
            settings=settings,
            outbox=self.outbox,
            store=self.floor,
            promotions=self.promotions,
            clock=self.clock,
            metrics=metrics or Metrics(),
            rng=random.Random(3),
        )

    async def draw_round_1(self) -> list[str]:
        """Draw round 1 now; the winners' cards in draw order."""
        records = await self.desk.run_round(GH, "halfway", 1)
        return [r.payload["card"] for r in records if r.kind == Kind.PICK]


async def drain(n: SmsNotifier) -> None:
    while await n.notify_once():
        pass


@pytest.fixture
async def env(site: str, redis_url: str) -> AsyncIterator[Env]:
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", site)
    gh = load_promotion(PROJECT / "promotions" / f"{GH}.toml")
    festa = load_promotion(PROJECT / "promotions" / f"{FESTA}.toml")
    store = PromotionStore(r, keys, [gh, festa])
    clock = ManualClock(dt.datetime.combine(gh.draw("halfway").date, dt.time(19), gh.zone))
    desk = desk_runner(store, clock, seed_source=random.Random(7).randbytes)
    counts = {Tombola.POOLED: {c: 1 + n % 4 for n, c in enumerate(CARDS)}}
    pool = EntryPool.freeze(
        promotion_id=GH, draw_id="halfway", closed_at=clock.now(), counts=counts
    )
    await r.set(store.keys.pool(GH, "halfway"), pool.canonical())
    floor = FloorStore(
        r, keys, dedup_ttl_s=3600, deadletter_maxlen=100, deadletter_payload_bytes=100
    )
    await floor.import_members([member(n, c) for n, c in enumerate(CARDS)])
    yield Env(r, keys, clock, desk, floor, store, Outbox(r, keys), site)
    await r.aclose()


async def test_only_opted_in_winners_are_texted_each_once(env: Env, provider: Provider) -> None:
    n = env.notifier(provider.url)
    await n.start()
    winners = await env.draw_round_1()
    await drain(n)
    entries = {e.card: e for e in await env.outbox.entries()}
    kinds = {c: kind_of(c) for c in winners}
    assert sorted(kinds.values()) == ["in", "in", "no_number", "out", "out"]
    texted = [c for c in winners if kinds[c] != "out"]
    assert sorted(entries) == sorted(f"****{c[-4:]}" for c in texted)  # opted out: none
    for card in texted:
        entry = entries[f"****{card[-4:]}"]
        assert entry.moment == "drawn"
        assert entry.status is (Status.QUEUED if kinds[card] == "in" else Status.NO_NUMBER)
        assert card not in entry.text
    assert await n.send_once() == 2
    assert await n.send_once() == 0
    by_number = {body["to"]: (headers, body) for headers, body in provider.posts}
    assert len(provider.posts) == 2 == len(by_number)
    for card in (c for c in winners if kinds[c] == "in"):
        headers, body = by_number[member(CARDS.index(card), card).mobile or ""]
        assert headers[SECRET_HEADER] == SECRET
        assert headers["Idempotency-Key"] == f"{env.site}-{body['id']}"
        assert body["site"] == env.site
        assert card not in json.dumps(body)
        assert f"card ****{card[-4:]} has been drawn in the Halfway draw!" in body["text"]
        assert "at the draw area by 19:01:30 (90 seconds" in body["text"]
    statuses = sorted(str(e.status) for e in await env.outbox.entries())
    assert statuses == ["no_number", "sent", "sent"]
    report = await env.outbox.report()
    assert (
        report["gateway"] == f"webhook http://127.0.0.1:{provider.url.split(':')[2].split('/')[0]}"
    )
    assert report["counts"]["sent"] == 2


async def test_a_restart_never_queues_or_sends_twice(env: Env, provider: Provider) -> None:
    first = env.notifier(provider.url)
    await first.start()
    await env.draw_round_1()
    await drain(first)  # queued, then the daemon dies before sending
    queued = [e.id for e in await env.outbox.entries() if e.status is Status.QUEUED]
    assert len(queued) == 2
    second = env.notifier(provider.url)
    await second.start()
    assert await second.notify_once() == 0  # the cursor was kept
    assert await second.send_once() == 2
    third = env.notifier(provider.url)
    await third.start()
    await drain(third)
    assert await third.send_once() == 0
    # even a cursor wound back to the start re-reads the trail without queueing again
    await env.redis.set(env.outbox.cursor, 0)
    fourth = env.notifier(provider.url)
    await fourth.start()
    await drain(fourth)
    assert await fourth.send_once() == 0
    assert len(provider.posts) == 2
    assert sorted(body["id"] for _, body in provider.posts) == sorted(queued)


async def test_a_failing_gateway_is_retried_and_reported(env: Env) -> None:
    failing = Provider(fail_first=2, status=503)
    metrics = Metrics()
    try:
        n = env.notifier(failing.url, metrics)
        await n.start()
        await env.draw_round_1()
        await drain(n)
        assert await n.send_once() == 2  # both fail: retried later, on the daemon clock
        entries = [e for e in await env.outbox.entries() if e.status is not Status.NO_NUMBER]
        for e in entries:
            assert e.status is Status.RETRYING
            assert e.attempts == 1
            assert "answered HTTP 503" in e.last_error
            assert e.next_attempt_at is not None
            assert e.next_attempt_at <= env.clock.now() + dt.timedelta(seconds=2)
        assert await n.send_once() == 0  # not due yet
        env.clock.advance(3)
        assert await n.send_once() == 2
        assert [str(e.status) for e in await env.outbox.entries() if e.attempts] == ["sent"] * 2
        assert len(failing.posts) == 4
        text = metrics.render().decode()
        assert 'bonusd_sms_messages_total{outcome="retry"} 2.0' in text
        assert 'bonusd_sms_messages_total{outcome="sent"} 2.0' in text
        assert 'bonusd_sms_messages_total{outcome="queued"} 2.0' in text
        assert 'bonusd_sms_messages_total{outcome="no_number"} 1.0' in text
    finally:
        failing.close()


async def test_a_slow_failing_gateway_never_holds_up_a_claim(env: Env) -> None:
    slow = Provider(fail_first=100, status=500, delay_s=1.5)
    try:
        n = env.notifier(slow.url)
        stop = asyncio.Event()
        async with asyncio.TaskGroup() as tg:
            tg.create_task(n.run(stop))
            await asyncio.sleep(0.2)
            await env.draw_round_1()
            async with asyncio.timeout(10):
                while not slow.posts:  # a send is now in flight, answering in 1.5 s
                    await asyncio.sleep(0.02)
            started = time.monotonic()
            await env.desk.act(GH, "halfway", 1, "present", CREW)
            await env.desk.act(GH, "halfway", 1, "verify", CREW)
            assert time.monotonic() - started < 1.0
            stop.set()
        book = await env.desk.book(GH, "halfway")
        assert str(book.claims[1].state) == "verified"
    finally:
        slow.close()


async def test_out_of_attempts_a_text_fails(env: Env) -> None:
    down = Provider(fail_first=100, status=502)
    try:
        n = env.notifier(down.url, sms_max_attempts=2)
        await n.start()
        await env.draw_round_1()
        await drain(n)
        await n.send_once()
        env.clock.advance(5)
        await n.send_once()  # the second and last attempt
        failed = [e for e in await env.outbox.entries() if e.attempts]
        assert [(str(e.status), e.attempts) for e in failed] == [("failed", 2)] * 2
        assert all("answered HTTP 502" in e.last_error for e in failed)
        env.clock.advance(5)
        assert await n.send_once() == 0
        assert len(down.posts) == 4
    finally:
        down.close()


async def test_a_text_that_cannot_go_out_in_time_is_not_sent_late(env: Env) -> None:
    down = Provider(fail_first=100, status=502)
    metrics = Metrics()
    try:
        n = env.notifier(down.url, metrics)
        await n.start()
        await env.draw_round_1()
        await drain(n)
        await n.send_once()
        env.clock.advance(91)  # the 90-second claim time is over
        assert await n.send_once() == 2
        late = [e for e in await env.outbox.entries() if e.attempts]
        assert [str(e.status) for e in late] == ["expired"] * 2
        assert all("answered HTTP 502" in e.last_error for e in late)
        assert len(down.posts) == 2
        assert 'bonusd_sms_messages_total{outcome="expired"} 2.0' in metrics.render().decode()
        with pytest.raises(OutboxError, match="only a failed text is resent"):
            await env.outbox.requeue(late[0].id, env.clock.now(), by="desk-1")
    finally:
        down.close()


async def test_a_refused_secret_fails_at_once_and_the_desk_resends(env: Env) -> None:
    wrong = Provider(fail_first=1, status=401)
    try:
        n = env.notifier(wrong.url)
        await n.start()
        await env.draw_round_1()
        await drain(n)
        await n.send_once()
        failed = [e for e in await env.outbox.entries() if e.status is Status.FAILED]
        assert len(failed) == 1  # the other went through (the provider accepts from then on)
        assert failed[0].attempts == 1
        assert "BONUSD_SMS_WEBHOOK_SECRET" in failed[0].last_error
        await env.outbox.requeue(failed[0].id, env.clock.now(), by="desk-1")
        assert await n.send_once() == 1
        assert (await env.outbox.get(failed[0].id)).status is Status.SENT
    finally:
        wrong.close()


async def test_raps_winners_are_texted_from_the_trail(env: Env) -> None:
    n = env.notifier()  # no webhook: entries stay in the local outbox
    await n.start()
    festa = env.promotions.promotion(FESTA)
    session = festa.jackpot_sessions[0]
    jid = f"{FESTA}.{session.id}.j1"
    at = dt.datetime.combine(session.date, dt.time(14, 30), festa.zone)
    env.clock.set(at + dt.timedelta(seconds=85))
    card = CARDS[1]  # opted in, with a number
    claim = RapsClaim(
        1, jackpot_id=jid, card=card, device="EGM-0412", area="main", bank="B3",
        alerted_at=at, actor=SCHEDULER,
    )  # fmt: skip
    detail = {"device": "EGM-0412", "area": "main", "bank": "B3", "seat": "", "pick": "1"}
    created = claim_payload(jid, card, replace(claim.history[0], detail=detail))
    audit = AuditStore(env.redis, env.keys)
    await audit.append(at=at, actor=actor_text(SCHEDULER), kind=Kind.CLAIM, payload=created)
    for action, seconds in (("crew_arrived", 60), ("not_at_device", 70), ("announce", 80)):
        when = at + dt.timedelta(seconds=seconds)
        move = getattr(claim, action)(CREW, when)
        payload = claim_payload(jid, card, move)
        await audit.append(at=when, actor=actor_text(CREW), kind=Kind.CLAIM, payload=payload)
    await drain(n)
    entries = sorted(await env.outbox.entries(), key=lambda e: int(e.id))
    assert [(e.moment, str(e.status)) for e in entries] == [
        ("selected", "queued"),
        ("called", "queued"),
    ]
    assert "at EGM-0412! Stay where you are playing" in entries[0].text
    assert "was not at EGM-0412. Present yourself at the place of draw by 14:32:50" in (
        entries[1].text
    )
    assert await n.send_once() == 0  # nothing leaves without a gateway


# -- through the running daemon ----------------------------------------------------------------
MEMBERS_CSV = "card,name,tier,sms_opt_in,mobile\n" + "".join(
    f"{m.card},{m.name},Q,{str(m.sms_opt_in).lower()},{m.mobile or ''}\n"
    for m in (member(n, c) for n, c in enumerate(CARDS))
)


@pytest.fixture
def gh_settings(settings: Settings, tmp_path: Path, site: str, provider: Provider) -> Settings:
    folder = tmp_path / "promotions"
    folder.mkdir()
    text = (PROJECT / "promotions" / f"{GH}.toml").read_text()
    (folder / f"{GH}.toml").write_text(text.replace('site = "golden-horse"', f'site = "{site}"'))
    return settings.model_copy(
        update={
            "promotions": folder,
            "sms_webhook_url": provider.url,
            "sms_webhook_secret": Settings(sms_webhook_secret=SECRET).sms_webhook_secret,
        }
    )


async def test_the_daemon_texts_announces_and_prints(
    gh_settings: Settings, provider: Provider, redis_url: str
) -> None:
    gh = load_promotion(PROJECT / "promotions" / f"{GH}.toml")
    clock = ManualClock(dt.datetime.combine(gh.draw("halfway").date, dt.time(19), gh.zone))
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys("bonusd", gh_settings.site)
    counts = {Tombola.POOLED: {c: 1 + n % 4 for n, c in enumerate(CARDS)}}
    pool = EntryPool.freeze(
        promotion_id=GH, draw_id="halfway", closed_at=clock.now(), counts=counts
    )
    await r.set(PromotionStore(r, keys, []).keys.pool(GH, "halfway"), pool.canonical())
    await r.aclose()
    base = f"/promotions/{GH}/draws/halfway"
    async with running(gh_settings, clock) as d:
        imported = await d.http.post(
            "/members/import", content=MEMBERS_CSV, headers={"content-type": "text/csv"}
        )
        assert imported.status_code == 200, imported.text
        desk, crew = await d.client(Role.DESK), await d.client(Role.CREW)
        # the texts are read from the trail once this daemon leads: from its end on a new site
        await asyncio.wait_for(d.service.notices.reading.wait(), 10)
        try:
            book = (await desk.post(f"{base}/run", json={"round": 1})).json()
            winners = [c["card"] for c in book["claims"]]
            texted = [c for c in winners if kind_of(c) == "in"]
            async with asyncio.timeout(10):
                while len(provider.posts) < len(texted):
                    await asyncio.sleep(0.05)
            outbox = (await desk.get("/sms/outbox")).json()
            assert outbox["gateway"].startswith("webhook http://127.0.0.1:")
            assert outbox["counts"]["sent"] == len(texted)
            assert all(e["card"].startswith("****") for e in outbox["entries"])
            assert (await crew.get("/sms/outbox")).status_code == 403

            prizes = {"tombola": "pooled", "round": 1, "values_cents": [500_000] * 5}
            assert (await desk.post(f"{base}/prizes", json=prizes)).status_code == 200
            for step, body in (("present", None), ("verify", None), ("reveal", {"reveal": 2})):
                answer = await crew.post(f"{base}/claims/1/{step}", json=body)
                assert answer.status_code == 200, answer.text
            lettered = (await desk.post(f"{base}/claims/1/letter")).json()
            number = lettered["claims"][0]["letter"]

            said = (await crew.get(f"{base}/announcements")).json()["announcements"]
            assert [a["moment"] for a in said] == ["drawn"] * 5 + [
                "presented",
                "verified",
                "prize",
            ]
            first = winners[0]
            assert f"Member {CARDS.index(first)} Dlamini" in said[0]["text"]
            assert "wins R5,000 in the Mega Points Chase Halfway draw" in said[-1]["text"]

            page = await desk.get(f"/letters/{number}/print?paper=A4")
            assert page.status_code == 200
            assert page.headers["content-type"].startswith("text/html")
            for text in (number, "Golden Horse", "Mega Points Chase", "Halfway draw", "R5,000"):
                assert text in page.text
            assert f"Member {CARDS.index(first)} Dlamini" in page.text
            assert f"****{first[-4:]}" in page.text
            assert first not in page.text
            assert "22 November 2026 (end of day)" in page.text
            assert (await crew.get(f"/letters/{number}/print")).status_code == 403
        finally:
            await desk.aclose()
            await crew.aclose()
