"""The changes side of a draw's book: exclusions, proxies and an early close of the entry
bin, each made directly before the freeze and through a four-eyes request after it
(`bonusd.draws.approvals`). A part of `DrawBook` (its base class). Pure: no I/O, no clock.

After the freeze an approved exclusion *passes over* the member from the next pick on (a
pick made before it stands; a winner who must not be paid is handled on the claim, whose
no-show starts the redraw). An exclusion the scheduler records because the member file
excludes a picked member (self-exclusion, staff) needs no request: it names that source.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from bonusd.audit.chain import Entry, Json, Kind
from bonusd.draws.approvals import (
    ApprovalError,
    Approvals,
    Approved,
    ChangeKind,
    ChangeRequest,
    Decision,
)
from bonusd.draws.claims import Actor, ClaimRole, ProxyRegister
from bonusd.draws.evidence import round_ref
from bonusd.draws.plan import DrawPlan
from bonusd.draws.rounds import DrawRounds
from bonusd.draws.types import DrawError

CHANGE_KINDS = frozenset({Kind.REQUEST, Kind.APPROVAL, Kind.EXCLUSION, Kind.PROXY})


class BinOpenError(DrawError):
    """The draw's entry bin is still open: its pools are not frozen, nor a round drawn from
    them, before the bin's scheduled close (the API answers 409)."""


def check_bin_closes(subject: str, closes_at: dt.datetime, now: dt.datetime, then: str) -> None:
    """`BinOpenError` naming the scheduled close while `now` is before it; `then` says
    what becomes possible at the close (it ends the message)."""
    if now < closes_at:
        left = dt.timedelta(seconds=int((closes_at - now).total_seconds()))
        raise BinOpenError(
            f"the entry bin of {subject} closes at {closes_at.isoformat()} (in {left}); {then}"
        )


class ChangeSteps:
    """Exclusions, proxies, four-eyes requests and early closes of one draw."""

    plan: DrawPlan
    subject: str
    draw: DrawRounds
    proxies: ProxyRegister
    approvals: Approvals
    closed_early: bool

    def _entry(self, kind: Kind, payload: dict[str, Json], actor: Actor, at: dt.datetime) -> Entry:
        raise NotImplementedError  # DrawBook's

    def _proxy(
        self, card: str, proxy_id: str, name: str, actor: Actor, at: dt.datetime
    ) -> dict[str, Json]:
        raise NotImplementedError  # ClaimSteps'

    @property
    def frozen(self) -> bool:
        """A round's pool is frozen: who may win changes only through a request now."""
        return any(r.pool is not None for r in self.draw.rounds.values())

    def _approval(
        self, number: int | None, change: ChangeKind, actor: Actor, card: str
    ) -> Approved | None:
        if not self.frozen or actor.role is ClaimRole.SYSTEM:
            if number is not None:
                raise ApprovalError(
                    f"{self.subject}: {change.noun} before the freeze needs no request"
                )
            return None
        return self.approvals.check_record(number, change, card)

    # -- steps: each returns the payload it records ---------------------------------------
    def _exclude(
        self, card: str, note: str, actor: Actor, request: int | None = None
    ) -> dict[str, Json]:
        approved = self._approval(request, ChangeKind.EXCLUSION, actor, card)
        self.draw.exclude(card)
        out: dict[str, Json] = {"draw_id": self.subject, "card": card, "note": note}
        return out | approved.fields() if approved else out

    def _proxy_change(
        self,
        card: str,
        proxy_id: str,
        name: str,
        actor: Actor,
        at: dt.datetime,
        *,
        request: int | None = None,
    ) -> dict[str, Json]:
        approved = self._approval(request, ChangeKind.PROXY, actor, card)
        out = self._proxy(card, proxy_id, name, actor, at)
        return out | approved.fields() if approved else out

    def _request(
        self, payload: Mapping[str, Any], actor: Actor, at: dt.datetime
    ) -> dict[str, Json]:
        wanted = ChangeRequest(
            int(payload["request"]),
            ChangeKind(payload["change"]),
            str(payload["reason"]),
            actor,
            at,
            card=str(payload.get("card", "")),
            proxy_id=str(payload.get("proxy_id", "")),
            name=str(payload.get("name", "")),
        )
        if wanted.change is ChangeKind.EARLY_CLOSE:
            if self.frozen:
                raise ApprovalError(f"{self.subject}: the entry bin is closed already")
            check = at < self.plan.bin_closes
            if not check:
                raise ApprovalError(f"{self.subject}: the entry bin's scheduled close has come")
        elif not self.frozen:
            raise ApprovalError(
                f"{self.subject}: the pools are not frozen yet; make the {wanted.change} "
                "directly (no approval is needed before the freeze)"
            )
        proxies = self.proxies
        if wanted.change is ChangeKind.PROXY and not proxies.opens_at <= at < proxies.closes_at:
            raise ApprovalError(
                f"{self.subject}: proxy forms are taken until {proxies.closes_at.isoformat()}; "
                "a proxy can no longer be registered for this draw"
            )
        if wanted.change is ChangeKind.EXCLUSION and wanted.card in self.draw.excluded:
            raise ApprovalError(f"{self.subject}: card {wanted.card} is excluded already")
        return self.approvals.request(wanted)

    def _early_close(self, number: int, at: dt.datetime) -> dict[str, Json]:
        approved = self.approvals.take(number, ChangeKind.EARLY_CLOSE)
        self.closed_early = True
        when = self.plan.bin_closes.isoformat()
        note = (
            f"entry bin closed early, before its scheduled close at {when}: "
            f"{approved.request.reason}"
        )
        key = self.plan.keys[0]
        fields = {"note": note, "change": ChangeKind.EARLY_CLOSE.value, "bin_closes": when}
        return round_ref(self.subject, *key) | fields | approved.fields()

    def check_close_time(self, at: dt.datetime) -> None:
        """A pool frozen before the bin's scheduled close needs an approved early close."""
        if at < self.plan.bin_closes and not self.closed_early:
            check_bin_closes(
                self.subject,
                self.plan.bin_closes,
                at,
                "no pool freezes before then without an approved early close",
            )

    def _replay_change(
        self, kind: Kind, payload: Mapping[str, Any], actor: Actor, at: dt.datetime
    ) -> dict[str, Json]:
        request = payload.get("request")
        if kind is Kind.REQUEST:
            return self._request(payload, actor, at)
        if kind is Kind.APPROVAL:
            return self.approvals.decide(
                int(payload["request"]), Decision(payload["decision"]), actor
            )
        if kind is Kind.EXCLUSION:
            return self._exclude(payload["card"], payload.get("note", ""), actor, request)
        return self._proxy_change(
            payload["card"], payload["proxy_id"], payload["name"], actor, at, request=request
        )

    # -- commands -------------------------------------------------------------------------
    def exclude(self, card: str, note: str, actor: Actor, at: dt.datetime) -> list[Entry]:
        """Exclude a member directly: before the freeze, or by the scheduler (member file)."""
        if card in self.draw.excluded:
            return []
        self._direct(ChangeKind.EXCLUSION, actor)
        return [self._entry(Kind.EXCLUSION, self._exclude(card, note, actor), actor, at)]

    def register_proxy(
        self, card: str, proxy_id: str, name: str, actor: Actor, at: dt.datetime
    ) -> list[Entry]:
        self._direct(ChangeKind.PROXY, actor)
        payload = self._proxy_change(card, proxy_id, name, actor, at)
        return [self._entry(Kind.PROXY, payload, actor, at)]

    def _direct(self, change: ChangeKind, actor: Actor) -> None:
        if self.frozen and actor.role is not ClaimRole.SYSTEM:
            raise ApprovalError(
                f"the pools of {self.subject} are frozen: {change.noun} now needs a written "
                "reason and a second staff member's approval (request it: POST "
                f"/promotions/{self.plan.promotion_id}/draws/{self.plan.draw_id}/changes)"
            )

    def request_change(
        self, change: ChangeKind, reason: str, actor: Actor, at: dt.datetime, **fields: str
    ) -> list[Entry]:
        """Ask for a four-eyes change; a second staff member decides it (`decide`)."""
        payload = {"request": len(self.approvals.requests) + 1, "change": change.value}
        payload |= {"reason": reason} | fields
        return [self._entry(Kind.REQUEST, self._request(payload, actor, at), actor, at)]

    def decide(self, number: int, decision: Decision, actor: Actor, at: dt.datetime) -> list[Entry]:
        """A second staff member's decision; an approved exclusion or proxy is made at once
        (an approved early close is made by `close_bin`, which needs the entry pool)."""
        wanted = self.approvals.requests.get(number)
        if wanted is None or decision is Decision.REFUSED:
            return [
                self._entry(
                    Kind.APPROVAL, self.approvals.decide(number, decision, actor), actor, at
                )
            ]
        if wanted.change is ChangeKind.EXCLUSION and wanted.card in self.draw.excluded:
            raise ApprovalError(f"{self.subject}: card {wanted.card} is excluded already")
        out = [
            self._entry(Kind.APPROVAL, self.approvals.decide(number, decision, actor), actor, at)
        ]
        if wanted.change is ChangeKind.EXCLUSION:
            made = self._exclude(wanted.card, wanted.reason, actor, number)
            out.append(self._entry(Kind.EXCLUSION, made, actor, at))
        elif wanted.change is ChangeKind.PROXY:
            made = self._proxy_change(
                wanted.card, wanted.proxy_id, wanted.name, actor, at, request=number
            )
            out.append(self._entry(Kind.PROXY, made, actor, at))
        return out
