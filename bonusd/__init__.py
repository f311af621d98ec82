"""bonusd: real-time casino floor bonusing.

The packages, from the bottom up (docs/architecture.md; the contracts in pyproject.toml
enforce the direction): `clocks`, `infra`, `floor`, `promotions`, `audit`, `draws`,
`raps`, `notices`, `push`, `ingest`, `api`, `service`, `cli`. This module holds the
version only, so importing any part of bonusd loads only what that part needs.
"""

__version__ = "0.1.0"
