"""What sealing adds to a draw or a RAPS pick per seed (`bench_draws.py` prints it): opening
a sealed seed beside parsing a plain hex one, timed in the same run."""

from __future__ import annotations

import secrets
import time

from bonusd.draws.seal import SeedSeal

SEAL = SeedSeal(secrets.token_bytes(32), source="the benchmark's throwaway seed key")


def seal_cost(n: int = 20_000) -> tuple[float, float]:
    """Per seed, in µs: opening a sealed seed (AES-GCM, `SeedSeal.open`), and parsing a
    plain hex seed as before sealing (`bytes.fromhex`), measured in the same run."""
    name, seed = "bonusd:{bench}:seed:p.d:main:1", secrets.token_bytes(32)
    sealed, plain = SEAL.seal(name, seed), seed.hex()
    t0 = time.perf_counter()
    for _ in range(n):
        SEAL.open(name, sealed)
    t1 = time.perf_counter()
    for _ in range(n):
        bytes.fromhex(plain)
    return (t1 - t0) / n * 1e6, (time.perf_counter() - t1) / n * 1e6
