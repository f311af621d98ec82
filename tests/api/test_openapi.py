"""/openapi.json describes what the API answers: one error body on every route, and every
success body field by field (a response model per route), so a casino's app team can
generate a client from the schema."""

from __future__ import annotations

from typing import Any

import pytest

from bonusd.service.root import Service
from bonusd.settings import Settings

GENERAL = ("404", "413", "503")
GUARDED = ("401", "403", "409", "429")  # where a token is checked
# the rest of the schema checks a token
PUBLIC = {"/health", "/metrics", "/screens/pairing", "/screens/pairing/claim"}


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    settings = Settings(site="openapi", redis_url="redis://127.0.0.1:1/0", key_prefix="t")
    return Service(settings).app.openapi()  # builds the app; connects to nothing


def _bare(spec: dict[str, Any], schema: dict[str, Any]) -> bool:
    if "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    if schema.get("type") == "array":
        return _bare(spec, schema.get("items", {}))
    if "anyOf" in schema:
        return any(_bare(spec, s) for s in schema["anyOf"])
    return schema.get("type") in ("object", None) and "properties" not in schema


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m, p, op) for p, ops in spec["paths"].items() for m, op in ops.items()]


def _error_body(op: dict[str, Any], code: str) -> Any:
    return op["responses"][code]["content"]["application/json"]["schema"]


def test_every_route_documents_the_one_error_body(spec: dict[str, Any]) -> None:
    ref = {"$ref": "#/components/schemas/ErrorOut"}
    guarded = 0
    for method, path, op in _operations(spec):
        for code in GENERAL:
            assert _error_body(op, code) == ref, (method, path, code)
        if "401" in op["responses"]:
            guarded += 1
            for code in GUARDED:
                assert _error_body(op, code) == ref, (method, path, code)
        else:
            assert path in PUBLIC, (method, path)
    assert guarded > 40
    error = spec["components"]["schemas"]["ErrorOut"]
    assert error["properties"]["detail"]["type"] == "string"


def test_every_success_body_is_described_field_by_field(spec: dict[str, Any]) -> None:
    untyped, seen = [], 0
    for method, path, op in _operations(spec):
        for code, response in op["responses"].items():
            if not code.startswith("2"):
                continue
            content = response.get("content", {})
            if not content:
                untyped.append(f"{method} {path}: {code} without a body schema")
            for media, body in content.items():
                schema = body.get("schema", {})
                seen += 1
                if not schema or (media == "application/json" and _bare(spec, schema)):
                    untyped.append(f"{method} {path}: {code} {media} is a bare object")
    assert seen >= 55  # every route of the API
    assert not untyped, "\n".join(untyped)


def test_the_check_finds_a_bare_body() -> None:
    spec = {"components": {"schemas": {"Out": {"type": "object", "properties": {"a": {}}}}}}
    assert _bare(spec, {"type": "object"})
    assert _bare(spec, {"type": "array", "items": {"type": "object"}})
    assert _bare(spec, {"anyOf": [{"$ref": "#/components/schemas/Out"}, {"type": "object"}]})
    assert not _bare(spec, {"$ref": "#/components/schemas/Out"})
    assert not _bare(spec, {"type": "array", "items": {"$ref": "#/components/schemas/Out"}})
