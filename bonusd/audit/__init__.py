"""The audit trail: the append-only hash chain (pure), its store in Redis, the archive
copied out of Redis, and the ledger step the draw and jackpot desks share."""
