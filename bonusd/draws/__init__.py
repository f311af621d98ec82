"""Ticket-weighted electronic draws: verifiable randomness (`fairness`), pool files,
the claim state machines, a draw's plan, rounds and book (pure), the runner that takes
their steps against Redis (`runner`, on `ledger`), the evidence and draw report, and the
auditor's verification. May import `audit`, `promotions`, `access`, `infra`, `settings`,
`clocks`, `registry` and `errors`; never `floor` (the same layer) or anything above."""
