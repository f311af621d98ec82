"""The live floor: the telemetry contract and its decoder, what one event does to the
floor and to promotion accounting (pure rules, merged effects), and the floor store in
Redis (atomic batches in Lua, sessions, visits, daily spend, the registries' records, the
active view, the idle sweep). May import `promotions`, `audit`, `access`, `infra`,
`settings`, `clocks`, `registry` and `errors`; never `draws` or anything above."""
