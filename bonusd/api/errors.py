"""The one error body of the API, `{"detail": "..."}`, and the refusals documented with it
in /openapi.json: those any route may give, and those of a token check on the guarded
routes. Validation refusals (422) keep
FastAPI's list of errors (`detail: [{loc, msg, type}, ...]`); an import's adds its rows."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field


class ErrorOut(BaseModel):
    """Why a request was refused, in words an operator can act on."""

    detail: str = Field(description="What was refused and what to do about it")


class RowErrorOut(BaseModel):
    row: int = Field(description="The file's row (1: the first after the header)")
    field: str
    problem: str


class ImportErrorOut(ErrorOut):
    """An import refused as a whole: every problem, by row and field."""

    errors: list[RowErrorOut]


GENERAL_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "No such promotion, draw, session, member or record"},
    413: {"model": ErrorOut, "description": "The body is over the route's limit"},
    503: {"model": ErrorOut, "description": "Redis is unavailable; the daemon keeps "
          "retrying, and so may the client"},
}  # fmt: skip
_REF = {"$ref": "#/components/schemas/ErrorOut"}  # GENERAL_ERRORS put it in the schema


def _json(description: str) -> dict[str, Any]:
    # spelled out: responses added to a route after it is built do not take a "model"
    return {"description": description, "content": {"application/json": {"schema": _REF}}}


GUARDED_ERRORS: dict[int | str, dict[str, Any]] = {
    401: _json("No token, or one that is unknown, expired or revoked"),
    403: _json("The token's role may not do this"),
    409: _json("Refused in the current state of a draw, a session or a claim (the detail "
               "says why and when it may be done)"),
    429: _json("Too many requests (or failed token checks) from this client, token or card "
               "in the current window; `Retry-After` says when to try again"),
}  # fmt: skip


def document_guarded(router: APIRouter) -> None:
    """The refusals of a token check on every route of `router` behind a role guard
    (`require` keeps its roles on the dependency), so the schema lists them where they
    can happen. Call before the router is included; calling it again changes nothing."""
    for route in router.routes:
        if isinstance(route, APIRoute) and any(
            getattr(dep.call, "roles", None) for dep in route.dependant.dependencies
        ):
            route.responses = {**GUARDED_ERRORS, **route.responses}


def json_errors_of(page: str) -> dict[int | str, dict[str, Any]]:
    """The refusals of a guarded route that answers HTML (`page`): they are JSON all the
    same, and the schema says so."""
    return {
        code: _json(f"{e['description']} (JSON, not the {page})")
        for code, e in (GENERAL_ERRORS | GUARDED_ERRORS).items()
    }


def invalid(message: str) -> HTTPException:
    """A 422 for a value the models let through but a rule refuses (a name with a control
    character, a PIN of the wrong length), in the shape of the validation errors the
    schema documents for 422 (`detail`: a list of `{loc, msg, type}`; the message names
    the field itself)."""
    return HTTPException(422, [{"loc": ["body"], "msg": message, "type": "value_error"}])
