"""What the screen-pairing and machine-credential routes (`bonusd.api.screens`) take and
answer: a screen asking to be paired and polling, the desk approving a code, the screens
and machine credentials the desk lists."""

from __future__ import annotations

import re
from typing import Annotated, Literal, cast

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from bonusd.access.machines import NAME_MAX, Credential
from bonusd.registry.text import plain_text

Pixels = Annotated[int, Field(ge=1, le=32768, description="Screen pixels (screen.width × dpr)")]
Area = Annotated[
    str,
    Field(
        pattern=r"^[a-z0-9_-]{1,32}$",
        description="An area of the floor, as the device registry spells it",
        examples=["main"],
    ),
]
TokenId = Annotated[str, Field(pattern=r"^[0-9a-f]{12}$")]
Connection = Literal["connected", "offline", "revoked", "expired"]
Kind = Literal["screen", "kiosk", "app server", "script"]
State = Literal["active", "revoked", "expired"]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PairingIn(_In):
    width: Pixels
    height: Pixels


class PairingOut(BaseModel):
    code: str = Field(description="Show it big: 6 characters, as two groups of three")
    expires_in_s: int = Field(description="A new pairing is needed after this")
    secret: str = Field(
        description="Keep it in the screen's own storage (never in a URL); poll with it"
    )


class ScreenClaimIn(_In):
    secret: Annotated[str, Field(min_length=1, max_length=80)]


class ScreenRef(BaseModel):
    id: str
    name: str
    area: str


class ScreenClaimOut(BaseModel):
    state: Literal["waiting", "paired"]
    code: str
    expires_in_s: int
    token: str | None = Field(
        None, description="Once paired: the screen's signage credential, given this once"
    )
    screen: ScreenRef | None = None


class PairIn(_In):
    code: Annotated[
        str,
        Field(
            pattern=r"^[A-Za-z0-9 -]{1,16}$",
            description="The code the screen shows (case, spaces and dashes do not matter)",
            examples=["K7M-4QX"],
        ),
    ]
    area: Area
    name: Annotated[
        str,
        Field(min_length=1, max_length=NAME_MAX, description="Where it hangs", examples=["Bar 3"]),
        AfterValidator(plain_text),
    ]


class PairOut(BaseModel):
    code: str
    area: str
    name: str
    expires_in_s: int = Field(description="The screen collects its credential before this")


class MoveIn(_In):
    area: Area


class HelloIn(_In):
    width: Pixels
    height: Pixels


class CredentialOut(BaseModel):
    """One machine credential; a screen's also say what it said about itself."""

    id: str
    kind: Kind
    role: str
    name: str
    area: str
    issued: str
    expires: str
    state: State
    connection: Connection
    revoked: str | None
    revoked_by: str | None
    last_used: str | None = Field(description="To the minute; None: never used")
    width: int | None = None
    height: int | None = None
    version: str | None = Field(None, description="bonusd's version when its page started")
    agent: str | None = Field(None, description="Its browser, as it said")
    address: str | None = Field(None, description="Where it asked to be paired from")
    paired_at: str | None = None
    paired_by: str | None = None
    moved_at: str | None = None
    moved_by: str | None = None
    hello_at: str | None = None


class ScreensOut(BaseModel):
    screens: list[CredentialOut]
    areas: list[str] = Field(description="The floor's areas (device registry and screens)")
    waiting: int = Field(description="Screens showing a pairing code now")


class CredentialsOut(BaseModel):
    credentials: list[CredentialOut]


def credential_out(found: Credential) -> CredentialOut:
    facts = found.facts

    def number(name: str) -> int | None:
        value = facts.get(name, "")
        return int(value) if value.isdigit() else None

    if found.state != "active":
        connection: Connection = "revoked" if found.state == "revoked" else "expired"
    else:
        connection = "connected" if found.online else "offline"
    return CredentialOut(
        id=found.id,
        kind=cast(Kind, found.kind),
        role=found.role,
        name=found.name,
        area=found.area,
        issued=found.issued,
        expires=found.expires,
        state=cast(State, found.state),
        connection=connection,
        revoked=found.revoked or None,
        revoked_by=found.revoked_by or None,
        last_used=found.last_used or None,
        width=number("width"),
        height=number("height"),
        version=facts.get("version") or None,
        agent=facts.get("agent") or None,
        address=facts.get("address") or None,
        paired_at=facts.get("paired_at") or None,
        paired_by=facts.get("paired_by") or None,
        moved_at=facts.get("moved_at") or None,
        moved_by=facts.get("moved_by") or None,
        hello_at=facts.get("hello_at") or None,
    )


_BROWSER = re.compile(r"\b(HeadlessChrome|Chromium|Chrome|Firefox|Edg|Version)/(\d+)")
_SYSTEMS = (("CrOS", "ChromeOS"), ("Android", "Android"), ("Linux", "Linux"),
            ("Windows", "Windows"), ("Mac OS X", "macOS"), ("iPhone", "iOS"))  # fmt: skip


def agent_of(user_agent: str) -> str:
    """A browser's User-Agent in a few words: "Chrome 120 · Linux" ("" if unknown)."""
    found = _BROWSER.search(user_agent)
    browser = ""
    if found:
        name = {"Version": "Safari", "Edg": "Edge"}.get(found.group(1), found.group(1))
        browser = f"{name} {found.group(2)}"
    system = next((label for mark, label in _SYSTEMS if mark in user_agent), "")
    return " · ".join(part for part in (browser, system) if part)
