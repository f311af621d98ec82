"""The plumbing every adapter shares: the Redis client and key layout, backoff, Redis
notification channels, the leader lease, health and metrics. No promotion, draw or floor
rule lives here; the rules above import it, never the reverse."""
