"""Sealed seeds beside plain ones, for `bench_draws.py`: `PlainSeal`, a bench-only seal that
keeps a seed as plain hex (the path from before seeds were sealed), given to a second draw
and RAPS runner so that both paths are timed in the same run; and what sealing adds per
seed, opening a sealed seed beside opening a plain one."""

from __future__ import annotations

import secrets
import time

from bonusd.draws.seal import KEY_BYTES, SEED_BYTES, SeedSeal
from bonusd.errors import SealError

SEAL = SeedSeal(secrets.token_bytes(32), source="the benchmark's throwaway seed key")


class PlainSeal(SeedSeal):
    """Bench only, never in bonusd/: the seal `SeedVault` calls (`seal`, `open`), keeping
    the seed as plain hex in Redis as before seeds were sealed; no key, no cipher (the
    parent's is made from a zero key and never used). `opened` counts the seeds opened, so
    the benchmark can say how many a draw round or a RAPS pick opens."""

    def __init__(self) -> None:
        super().__init__(bytes(KEY_BYTES), source="the benchmark's plain-hex path (no key)")
        self.opened = 0

    def seal(self, name: str, seed: bytes) -> str:
        return seed.hex()

    def open(self, name: str, text: str) -> bytes:
        self.opened += 1
        try:
            seed = bytes.fromhex(text)
        except ValueError:
            raise SealError(f"{name} does not hold a plain hex seed") from None
        if len(seed) != SEED_BYTES:
            raise SealError(f"{name} holds {len(seed)} bytes, not a seed")
        return seed


def seal_cost(n: int = 20_000) -> tuple[float, float]:
    """Per seed, in µs: opening a sealed seed (AES-GCM, `SeedSeal.open`), and opening a
    plain hex one (`PlainSeal.open`: what the plain path of the benchmark does), measured
    in the same run."""
    name, seed, plain = "bonusd:{bench}:seed:p.d:main:1", secrets.token_bytes(32), PlainSeal()
    sealed, hexed = SEAL.seal(name, seed), plain.seal(name, seed)
    t0 = time.perf_counter()
    for _ in range(n):
        SEAL.open(name, sealed)
    t1 = time.perf_counter()
    for _ in range(n):
        plain.open(name, hexed)
    return (t1 - t0) / n * 1e6, (time.perf_counter() - t1) / n * 1e6
