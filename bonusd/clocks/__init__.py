"""Time: the `Clock` every time-dependent part takes (wall, simulated at any speed,
manual for tests), gaming-day arithmetic, and the arithmetic of a shared clock (the shared
clock itself, kept in Redis, is `infra.sharedclock`). Pure; imports nothing of bonusd but
`errors`."""
