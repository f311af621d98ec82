"""Telling the winners and the floor: winner events read from the audit trail, PA
announcements, SMS texts and printable prize letters (pure), the SMS outbox and gateway
and the notifier task. May import `raps`, `draws`, `floor` and every package below them;
never `ingest` (the same layer), `push` or above."""
