"""The audit trail: the append-only hash chain (pure, `chain`), its store in Redis with
the per-draw and per-session ledgers the runners of `draws` and `raps` step through, and
the monthly archive copied out of Redis. May import `infra`, `settings`, `clocks`,
`registry` and `errors`."""
