"""The live floor: the telemetry contract and its decoder, what one event does to the
floor (pure rules), promotion accounting on the ingest path, and the floor store in Redis
(atomic batches in Lua, sessions, visits, daily spend, the active view, the idle sweep),
plus the member and device registries."""
