"""The live push: what floor signage and crew handhelds show (pure views, masking of
names and cards), the streams with their epochs and sequence numbers, the hub that feeds
them, and validation of what a websocket client may send. May import `notices`, `ingest`
and every package below them; never `api`, `service` or `cli`."""
