"""The fields a request may carry, each with its bounds, spelled once: a card number, a
person's name, a note, a reason (a note that must say something), an ID document number,
a tombola, a pool hash. Free text passes
`bonusd.registry.text.plain_text`: no control, line-separator or text-direction
character reaches an audit record, a screen or a prize letter."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from bonusd.registry.records import CARD_PATTERN
from bonusd.registry.text import plain_text

Card = Annotated[str, Field(pattern=CARD_PATTERN, description="Member card number")]
PersonName = Annotated[
    str, Field(max_length=80, description="A person's name as written"), AfterValidator(plain_text)
]
Note = Annotated[
    str, Field(max_length=200, description="Why, in a few words"), AfterValidator(plain_text)
]


def _says_something(value: str) -> str:
    if not value.strip():
        raise ValueError("write the reason in a few words; it may not be blank")
    return value


Reason = Annotated[
    str,
    Field(min_length=1, max_length=200, description="Why, in the person's own words"),
    AfterValidator(plain_text),
    AfterValidator(_says_something),
]
DocumentNumber = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9 /-]{2,31}$",
        description="An ID document number (letters, digits, spaces, '/' or '-')",
    ),
]
TombolaName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
PoolHash = Annotated[
    str, Field(pattern=r"^[0-9a-fA-F]{1,64}$", description="The pool hash printed on the list")
]
