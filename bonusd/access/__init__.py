"""Who may do what: bearer tokens with one role each (a screen's also bound to an area),
and request rate limits counted atomically in Redis on the daemon's clock. Used by the
HTTP routes and by the live push, which closes the sockets of revoked tokens. May import
`infra`, `settings`, `clocks`, `registry` and `errors`."""
