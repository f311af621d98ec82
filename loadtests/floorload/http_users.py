"""HTTP users: the promotions desk and the eHost kiosks (routes: bonusd/api*.py).

The desk does what the desk page (displays/desk*.js) does: look a member up (the member,
the promotion, the member's standing in tonight's draw, the gaming day's totals), open
the draws tab (promotions, the promotion, the draw's book), sync its clock from /health,
now and then the whole draw's summary and the dead letters. A kiosk serves a member on
the floor: the standing (tickets), then the activation of the entries (channel kiosk).
Cards are members who carded in when the floor filled, so they are on the floor.
"""

from __future__ import annotations

import random

from locust import FastHttpUser, between, task

from floorload.config import from_environment

CFG = from_environment()
DRAW = f"/promotions/{CFG.promotion}/draws/{CFG.draw}"


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class PromotionsDesk(FastHttpUser):
    """A promotions-desk PC."""

    fixed_count = CFG.users.get("PromotionsDesk", 0)
    host = CFG.http_base or "http://127.0.0.1"
    wait_time = between(*CFG.desk_wait)

    def on_start(self) -> None:
        assert CFG.tokens is not None
        self.headers = _auth(CFG.tokens.desk)
        self.client.get("/promotions/changes", headers=self.headers)  # the page's role check

    @task(5)
    def member_lookup(self) -> None:
        card = random.choice(CFG.cards)
        get, h = self.client.get, self.headers
        get(f"/members/{card}", headers=h, name="/members/[card]")
        get(f"/promotions/{CFG.promotion}", headers=h, name="/promotions/[promotion]")
        get(f"{DRAW}/standings/{card}", headers=h, name="/promotions/.../standings/[card] (desk)")
        get(
            f"/members/{card}/days/{CFG.gaming_day}",
            headers=h,
            name="/members/[card]/days/[day]",
        )

    @task(2)
    def draws_tab(self) -> None:
        get, h = self.client.get, self.headers
        get("/promotions", headers=h)
        get(f"/promotions/{CFG.promotion}", headers=h, name="/promotions/[promotion]")
        get(f"{DRAW}/book", headers=h, name="/promotions/.../book")

    @task(3)
    def clock_sync(self) -> None:
        self.client.get("/health")

    @task(1 if CFG.extra.get("desk_summary", True) else 0)
    def summary(self) -> None:
        self.client.get(f"{DRAW}/summary", headers=self.headers, name="/promotions/.../summary")

    @task(1)
    def deadletters(self) -> None:
        self.client.get("/deadletters?count=50", headers=self.headers)


class Kiosk(FastHttpUser):
    """An eHost kiosk: a member checks their tickets and prints the entry receipt."""

    fixed_count = CFG.users.get("Kiosk", 0)
    host = CFG.http_base or "http://127.0.0.1"
    wait_time = between(*CFG.kiosk_wait)

    def on_start(self) -> None:
        assert CFG.tokens is not None
        self.headers = _auth(CFG.tokens.kiosk)

    @task
    def activate(self) -> None:
        card = random.choice(CFG.cards)
        self.client.get(
            f"{DRAW}/standings/{card}",
            headers=self.headers,
            name="/promotions/.../standings/[card] (kiosk)",
        )
        self.client.post(
            f"{DRAW}/activations",
            json={"card": card, "channel": "kiosk"},
            headers=self.headers,
            name="/promotions/.../activations (kiosk)",
        )
