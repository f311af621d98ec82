"""The HTTP API: its schema, GET purity, bodies, headers, roles and rate limits."""
