"""The published JSON Schemas are the ones the decoder enforces."""

from __future__ import annotations

import json

from bonusd.floor.telemetry import json_schemas
from tests.daemon_helpers import PROJECT


def test_docs_schemas_are_current() -> None:
    folder = PROJECT / "docs" / "schemas"
    generated = json_schemas()
    on_disk = {p.name.removesuffix(".schema.json") for p in folder.glob("*.schema.json")}
    assert on_disk == set(generated), "run: bonusd telemetry schemas --out docs/schemas"
    for name, schema in generated.items():
        saved = json.loads((folder / f"{name}.schema.json").read_text())
        assert saved == schema, f"docs/schemas/{name}.schema.json is stale"
